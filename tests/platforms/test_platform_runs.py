"""--platform: the comparison under qemu's emulation of an AVX2 CPU without VNNI, held to onnxruntime run alone
under the same emulation. Every expectation is computed by an independent run, none depends on this CPU."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from platformkit import LIMIT, V3_MODEL, int8_max_abs, needs_qemu, outputs, reduce_range_variant, write_bundle

from checker.render import render
from checker.reports.files import validate
from checker.reports.model import Report

pytestmark = needs_qemu
Cli = Callable[..., tuple[int, str, str]]
CASES = 4
PRECISION = {"session.x64quantprecision": "1"}


def _verify(cli: Cli, bundle: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code, stdout, err = cli("verify", bundle, "--format", "json", "-o", out, *extra)
    assert code in (0, 1), err
    return code, json.loads(out.read_text()), stdout


def _int8(comparisons: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for c in comparisons if c["graph"] == "int8" for r in c["rules"])


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    declared = {"platforms": [{"arch": "x86_64", "cpu": "x86-64-v3"}]}
    return write_bundle(tmp_path_factory.mktemp("pairs"), CASES, declared)


def test_a_variant_that_saturates_without_vnni_is_caught_explained_and_remedied(
    cli: Cli, planted: Path, tmp_path: Path
) -> None:
    code, report, text = _verify(cli, planted, tmp_path / "r.json", "--platform", "target", "--platform", "x86-64-v4")
    validate(report, tmp_path / "r.json")
    bundle = report["bundles"][0]
    [v3] = bundle["runtimes"]
    emulated = int8_max_abs(planted, CASES, V3_MODEL)
    native = int8_max_abs(planted, CASES, None)
    # The planted variant: beyond its limit on the emulated AVX2 CPU, whatever this machine's kernels do.
    assert emulated > LIMIT
    assert _int8(v3["comparisons"])["measured"] == pytest.approx(emulated, rel=1e-6)
    assert _int8(bundle["comparisons"])["measured"] == pytest.approx(native, rel=1e-6)
    assert v3["status"] == "fail" and code == 1 and report["status"] == "fail"
    platform = v3["platform"]
    # Emulated, unless this machine is itself of that class (then the run is native and measures the same).
    assert platform["class"] == "x86-64-v3" and platform["how"] in (f"qemu-x86_64 -cpu {V3_MODEL}", "native")
    assert "AVX2" in platform["cpu_features"] and "AVX512F" not in platform["cpu_features"]
    # Explained, with the remedy measured there: the option makes the AVX2 kernels exact.
    [kernel] = [f for f in bundle["findings"] if f["id"] == "platform.kernel"]
    remedied = int8_max_abs(planted, CASES, V3_MODEL, PRECISION)
    assert remedied <= LIMIT
    assert kernel["details"]["remedy"]["passes"] is True
    assert kernel["details"]["remedy"]["figures"][0]["measured"] == pytest.approx(remedied, rel=1e-6)
    assert f"{remedied:.4g}" in kernel["message"] and "session.x64quantprecision=1" in kernel["message"]
    # Re-quantized with reduce_range=True (7-bit weights) by the recorded transform, measured there too.
    again = reduce_range_variant(planted, tmp_path / "reduce-range")
    requantized_there = int8_max_abs(again, CASES, V3_MODEL)
    requantized = kernel["details"]["requantized"]
    assert requantized["measured"] is True and requantized["settings"] == {"reduce_range": True}
    assert requantized["figures"][0]["measured"] == pytest.approx(requantized_there, rel=1e-6)
    assert requantized["passes"] is (requantized_there <= LIMIT) is True
    assert (
        f"reduce_range=True (onnxruntime {ort.__version__}) it holds: y/max_abs {requantized_there:.4g}"
        in (kernel["message"])
    )
    # How many output values differ from the native run there, and by how much at most: onnxruntime alone.
    native_values = outputs(planted, "int8.onnx", CASES, None, tmp_path / "native.npz")
    emulated_values = outputs(planted, "int8.onnx", CASES, V3_MODEL, tmp_path / "emulated.npz")
    differ = sum(int(np.count_nonzero(a != b)) for a, b in zip(native_values, emulated_values))
    worst = max(float(np.abs(a - b).max()) for a, b in zip(native_values, emulated_values))
    against = platform["against_native"]["int8"]
    assert against == {"differ": differ, "of": CASES * 2 * 8, "max_abs": pytest.approx(worst, rel=1e-6), "cases": CASES}
    if differ:  # an AVX2 machine running natively computes what the emulation does: nothing differs
        assert f"platform x86-64-v3, int8: {differ} of {CASES * 16} output values differ from the native run" in text
    assert platform["against_native"]["baseline"]["max_abs"] < 1e-4  # the float graph: equal or nearly
    # What cannot be emulated here is not run, and says so in the verdict line.
    assert [n["check"] for n in bundle["not_run"]] == ["platform x86-64-v4"]
    assert "1 check not run: platform x86-64-v4" in text.splitlines()[0]
    rows = [line for line in text.splitlines() if line.strip().startswith("platform x86-64-v3")]
    assert rows and f"✗ {emulated:.4g}" in rows[0]


def test_the_emulated_platform_holds_when_the_variant_does(cli: Cli, planted: Path, tmp_path: Path) -> None:
    """The example's own kind of result: a limit both kernels meet passes on the platform, its figure its own."""
    manifest = tmp_path / "loose"
    shutil.copytree(planted, manifest)
    text = (manifest / "bundle.yaml").read_text().replace(f"max: {LIMIT}", "max: 50.0")
    (manifest / "bundle.yaml").write_text(text)
    code, report, _ = _verify(cli, manifest, tmp_path / "r.json", "--platform", "x86-64-v3")
    [v3] = report["bundles"][0]["runtimes"]
    assert code == 0 and v3["status"] == "pass" and report["bundles"][0]["not_run"] == []  # it did run there
    # The one warning is the calibration this kit does not record (variant.transform), nothing about the platform.
    assert {f["id"] for f in report["bundles"][0]["findings"] if f["severity"] != "info"} == {"variant.transform"}
    assert not [f for f in report["bundles"][0]["findings"] if f["id"] == "platform.kernel"]
    assert _int8(v3["comparisons"])["measured"] == pytest.approx(int8_max_abs(manifest, CASES, V3_MODEL), rel=1e-6)


def test_shards_on_a_platform_merge_into_the_whole_run(cli: Cli, planted: Path, tmp_path: Path) -> None:
    _, whole, _ = _verify(cli, planted, tmp_path / "whole.json", "--platform", "x86-64-v3")
    parts = []
    for k in (1, 2):
        _verify(cli, planted, tmp_path / f"s{k}.json", "--platform", "x86-64-v3", "--shard", f"{k}/2")
        parts.append(tmp_path / f"s{k}.json")
    code, _, err = cli("report", "merge", *parts, "--format", "json", "-o", tmp_path / "merged.json")
    assert code in (0, 1), err
    merged = json.loads((tmp_path / "merged.json").read_text())
    [one], [other] = whole["bundles"][0]["runtimes"], merged["bundles"][0]["runtimes"]
    assert other["runtime"] == one["runtime"] and other["status"] == one["status"] == "fail"
    assert other["platform"]["class"] == "x86-64-v3"
    assert _int8(other["comparisons"])["measured"] == _int8(one["comparisons"])["measured"]
    assert _int8(other["comparisons"])["cases"] == _int8(one["comparisons"])["cases"]


def test_junit_and_markdown_show_the_platform_figures(cli: Cli, planted: Path, tmp_path: Path) -> None:
    _, report, _ = _verify(cli, planted, tmp_path / "r.json", "--platform", "x86-64-v3")
    emulated = _int8(report["bundles"][0]["runtimes"][0]["comparisons"])["measured"]
    junit = ET.fromstring(render("junit", Report.from_dict(report)))
    [case] = [c for c in junit.iter("testcase") if c.get("classname") == "pairs.platform-x86-64-v3.int8.vs-reference"]
    failure = case.find("failure")
    assert failure is not None and f"measured {emulated}" in (failure.get("message") or "")
    markdown = render("markdown", Report.from_dict(report))
    assert "platform x86-64-v3" in markdown and f"✗ {emulated:.4g}" in markdown
