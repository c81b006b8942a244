"""Platforms as declared and named: the classes, the manifest's entries, target names, and what can run here."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from bundlekit import linear_model, put
from platformkit import write_bundle as write_pairs

from checker.manifest.schema import validator
from checker.platforms.catalog import Platform, from_manifest, platform_of_target, resolve
from checker.platforms.features import class_of
from checker.platforms.launch import Plan, in_userland, plan
from checker.release.init import init_bundle

Cli = Callable[..., tuple[int, str, str]]
V3 = Platform("x86-64-v3", "x86_64", "x86-64-v3", ())
RUNTIME = {
    "platforms": [
        {"name": "pi5", "arch": "aarch64", "features": ["dotprod"]},
        {"arch": "x86_64", "cpu": "x86-64-v3"},
    ]
}


def test_declared_names_classes_and_target_resolve() -> None:
    chosen, unknown = resolve(["target", "x86-64-v4-vnni", "pi5", "nonsense"], RUNTIME)
    assert [(p.name, p.cpu_class) for p in chosen] == [
        ("pi5", "aarch64-dotprod"),
        ("x86-64-v3", "x86-64-v3"),
        ("x86-64-v4-vnni", "x86-64-v4-vnni"),
    ]
    assert unknown == ["nonsense"]
    assert from_manifest({"arch": "aarch64", "features": ["i8mm", "dotprod"]}).cpu_class == "aarch64-dotprod-i8mm"


@pytest.mark.parametrize(
    ("machine", "features", "expected"),
    [
        ("x86_64", ["SSE42", "X86_V2", "AVX2", "X86_V3"], "x86-64-v3"),
        ("x86_64", ["X86_V2", "X86_V3", "X86_V4", "AVX512VNNI"], "x86-64-v4-vnni"),
        ("x86_64", ["X86_V2", "X86_V3", "X86_V4"], "x86-64-v4"),
        ("aarch64", ["ASIMD", "ASIMDDP"], "aarch64-dotprod"),
        ("aarch64", ["ASIMD"], "aarch64"),
        ("arm64", ["ASIMDDP", "I8MM"], "aarch64-dotprod-i8mm"),
    ],
)
def test_the_class_of_numpy_features(machine: str, features: list[str], expected: str) -> None:
    assert class_of(machine, features) == expected


def test_a_class_tcg_lacks_is_not_run_with_its_reason() -> None:
    v4 = Platform("x86-64-v4", "x86_64", "x86-64-v4", ())
    reason = plan(v4, "x86-64-v3")
    assert isinstance(reason, str) and "AVX-512" in reason
    i8mm = plan(Platform("odd", "aarch64", None, ("i8mm",)), "x86-64-v3")
    assert isinstance(i8mm, str) and "no CPU model with i8mm" in i8mm
    native = plan(V3, "x86-64-v3")
    assert isinstance(native, Plan) and native.launcher == () and native.how == "native"


def test_a_missing_qemu_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    reason = plan(V3, "x86-64-v4-vnni")
    assert reason == "qemu-x86_64 is not installed (Debian and Ubuntu: apt-get install qemu-user)" or (
        isinstance(reason, str) and "x86-64 machine" in reason  # on an aarch64 machine
    )
    arm = plan(Platform("pi5", "aarch64", None, ("dotprod",)), "x86-64-v3")
    assert arm == "qemu-aarch64 is not installed (Debian and Ubuntu: apt-get install qemu-user)"


def test_an_aarch64_class_runs_in_the_userland_under_its_cpu_model() -> None:
    arm = plan(Platform("pi5", "aarch64", None, ("dotprod",)), "x86-64-v3")
    if isinstance(arm, str):
        pytest.skip(arm)  # no qemu-aarch64 here
    assert arm.userland and arm.how == "qemu-aarch64 -cpu cortex-a76"
    placed = in_userland(arm, Path("/cache/view"))
    assert placed.launcher[-2:] == ("-L", "/cache/view") and placed.python == Path("/cache/view/usr/bin/python3.11")


@pytest.mark.parametrize(
    ("target", "entry"),
    [
        ("Raspberry Pi 5, aarch64, Debian 12", {"arch": "aarch64", "features": ["dotprod"]}),
        ("Raspberry Pi 4", {"arch": "aarch64"}),
        ("GitHub ubuntu-24.04-arm", {"arch": "aarch64", "features": ["dotprod", "i8mm"]}),
        ("Intel Haswell laptop", {"arch": "x86_64", "cpu": "x86-64-v3"}),
        ("AWS c7i (Sapphire Rapids)", {"arch": "x86_64", "cpu": "x86-64-v4", "features": ["vnni"]}),
        ("a toaster", None),
    ],
)
def test_known_target_names_propose_a_platform(target: str, entry: dict | None) -> None:
    assert platform_of_target(target) == entry


def _runtime_errors(platforms: list[dict]) -> list[str]:
    data = {"manifest_version": 1, "release": {"name": "m", "version": "1"}, "runtime": {"name": "onnxruntime",
            "version": ">=1.17", "platforms": platforms, "optimization_levels": ["basic", "all"]}}  # fmt: skip
    return [e.message for e in validator("manifest").iter_errors(data)]


def test_the_schema_takes_platforms_and_refuses_a_mixed_up_one() -> None:
    assert _runtime_errors(RUNTIME["platforms"]) == []
    assert _runtime_errors([{"arch": "x86_64", "cpu": "x86-64-v4", "features": ["vnni"]}]) == []
    assert _runtime_errors([{"arch": "x86_64"}])  # an x86 platform names its level
    assert _runtime_errors([{"arch": "x86_64", "cpu": "x86-64-v3", "features": ["dotprod"]}])
    assert _runtime_errors([{"arch": "aarch64", "features": ["vnni"]}])
    assert _runtime_errors([{"arch": "aarch64", "cpu": "x86-64-v3"}])


def test_init_proposes_the_platform_of_a_known_target(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    put(model, linear_model())
    result = init_bundle(model, device="Raspberry Pi 5, aarch64, Debian 12")
    text = result.manifest.read_text()
    assert "target: Raspberry Pi 5, aarch64, Debian 12" in text
    assert "- {arch: aarch64, features: [dotprod]}" in text
    assert "runtime.platforms: aarch64-dotprod" in result.guesses
    init_bundle(model, device="a toaster", force=True)
    assert "platforms" not in result.manifest.read_text()


def test_a_platform_not_run_fails_strict_and_an_unknown_name_is_an_error(cli: Cli, tmp_path: Path) -> None:
    bundle = write_pairs(tmp_path / "pairs", 2, limit=50.0)  # passes here whatever this CPU's int8 kernels do
    out = tmp_path / "r.json"
    code, text, err = cli("verify", bundle, "--platform", "aarch64-i8mm", "--format", "json", "-o", out)
    report = json.loads(out.read_text())["bundles"][0]
    assert code == 0 and "runtimes" not in report, err
    assert report["not_run"] == [
        {"check": "platform aarch64-i8mm", "reason": "aarch64-i8mm cannot be emulated: qemu has no CPU model with "
         "i8mm and without the dot product"}
    ]  # fmt: skip
    assert "1 check not run: platform aarch64-i8mm" in text.splitlines()[0]
    code, _, _ = cli("verify", bundle, "--platform", "aarch64-i8mm", "--strict")
    assert code == 1
    code, _, _ = cli("verify", bundle, "--platform", "pdp-11", "--format", "json", "-o", out)
    [unknown] = [f for f in json.loads(out.read_text())["bundles"][0]["findings"] if f["id"] == "platform.not_run"]
    assert code == 1 and unknown["severity"] == "error" and "--platform pdp-11" in unknown["message"]
