"""Declared platforms are judged by default: one that cannot run here, or that a run leaves out, shows in the
verdict line by name, and --strict fails it. Never a quiet skip."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundlekit import linear_model, manifest, write_bundle

from checker.manifest.schema import validator
from checker.platforms.catalog import ARM, X86
from checker.platforms.features import this_machine

Cli = Callable[..., tuple[int, str, str]]
NEVER = {"arch": "aarch64", "features": ["i8mm"]}  # i8mm without the dot product: no machine, no qemu model


def _here() -> dict[str, Any]:
    """This machine's own class as a runtime.platforms entry: it always runs, natively."""
    cpu_class, _ = this_machine()
    if cpu_class.startswith("x86-64-v"):
        level, *features = cpu_class.split("-")[2:]
        return {"name": "here", "arch": X86, "cpu": f"x86-64-{level}", "features": features}
    if cpu_class.startswith(ARM):
        return {"name": "here", "arch": ARM, "features": cpu_class.split("-")[1:]}
    pytest.skip(f"no platform entry names this machine's class ({cpu_class})")


def _bundle(root: Path, platforms: list[dict[str, Any]]) -> Path:
    data = manifest()
    data["runtime"]["platforms"] = platforms
    return write_bundle(root, linear_model(), data)


def _run(cli: Cli, bundle: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code, text, err = cli("verify", bundle, "--no-progress", "--format", "json", "-o", out, *extra)
    assert code in (0, 1), err
    return code, json.loads(out.read_text())["bundles"][0], text


def test_declared_platforms_are_judged_without_asking_and_one_that_cannot_run_is_named(
    cli: Cli, tmp_path: Path
) -> None:
    bundle = _bundle(tmp_path / "b", [_here(), NEVER])
    code, report, text = _run(cli, bundle, tmp_path / "r.json")
    assert code == 0
    [judged] = report["runtimes"]
    assert judged["platform"]["name"] == "here" and judged["platform"]["how"] == "native"
    assert judged["status"] == "pass"
    [missed] = report["not_run"]
    assert missed["check"] == "platform aarch64-i8mm" and "cannot be emulated" in missed["reason"]
    assert "1 check not run: platform aarch64-i8mm" in text.splitlines()[0]
    code, _, _ = cli("verify", bundle, "--strict", "--no-progress")
    assert code == 1


def test_a_declared_platform_a_run_leaves_out_shows_as_not_run(cli: Cli, tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b", [_here(), {"name": "web", "engine": "browser-wasm"}])
    code, report, _ = _run(cli, bundle, tmp_path / "r.json", "--platform", "here")
    assert code == 0 and [r["platform"]["name"] for r in report["runtimes"]] == ["here"]
    assert report["not_run"] == [
        {"check": "platform web (browser-wasm)",
         "reason": "declared in runtime.platforms, but not judged in this run (--platform named only here)"}
    ]  # fmt: skip
    code, report, _ = _run(cli, bundle, tmp_path / "n.json", "--platform", "none")
    assert code == 0 and "runtimes" not in report
    checks = [n["check"] for n in report["not_run"]]
    assert checks == [f"platform here ({_class()})", "platform web (browser-wasm)"]
    assert all("--platform none" in n["reason"] for n in report["not_run"])
    code, _, _ = cli("verify", bundle, "--platform", "none", "--strict", "--no-progress")
    assert code == 1


def _class() -> str:
    return this_machine()[0]


def test_the_schema_takes_engines_and_refuses_an_engine_with_a_cpu() -> None:
    def errors(platforms: list[dict[str, Any]], **more: Any) -> list[str]:
        data = manifest()
        data["runtime"].update(platforms=platforms, **more)
        return [e.message for e in validator("manifest").iter_errors(data)]

    assert errors([{"engine": e} for e in ("browser-wasm", "browser-webgpu", "node", "device")], web=">=1.30") == []
    assert errors([{"engine": "node", "arch": "x86_64", "cpu": "x86-64-v3"}])
    assert errors([{"engine": "browser-gl"}])
    assert errors([{"name": "x"}])  # neither a class nor an engine
    assert errors([{"arch": "x86_64"}])  # x86_64 still names its level
