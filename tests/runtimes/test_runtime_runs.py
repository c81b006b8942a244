"""`checker verify --runtime`: real onnxruntime releases installed from the package index into the cache.

Slow the first time on a machine (each runtime is downloaded once into pytest's cache folder, then reused by
every later test and run); all in one xdist group, so two workers never install the same runtime at once.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
import yaml
from bundlekit import linear_model, manifest, write_bundle

from checker.release.lock import lock
from checker.reports.model import BundleReport, Report, json_figures

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("runtimes")]
Cli = Callable[..., tuple[int, str, str]]


def _report(cli: Cli, tmp_path: Path, *args: object) -> tuple[int, dict, str]:
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.json')))}.json"
    code, text, err = cli("verify", *args, "--format", "json", "-o", out)
    assert code in (0, 1), err
    return code, json.loads(out.read_text())["bundles"][0], text


def _sets(bundle: dict) -> dict[str, dict]:
    return {r["runtime"]: r for r in bundle.get("runtimes", [])}


def test_a_variant_needing_a_newer_opset_fails_to_load_in_the_oldest_admitted_runtime(
    cli: Cli, runtime_cache: Path, tmp_path: Path
) -> None:
    model = linear_model(opset=17)
    newer = linear_model(opset=21)
    newer.ir_version = 9  # loadable by IR; only the ai.onnx opset is too new for onnxruntime 1.17
    data = manifest(
        variants=[
            {
                "name": "opset21",
                "graph": {"path": "model.opset21.onnx"},
                "derived_from": "baseline",
                "transform": {"tool": "onnx.version_converter", "version": onnx.__version__, "settings": {"opset": 21}},
                "rules": [{"output": "y", "check": "allclose", "atol": 1e-5, "rtol": 1e-4}],
            }
        ]
    )
    bundle = write_bundle(tmp_path / "b", model, data)
    onnx.save(newer, str(bundle / "model.opset21.onnx"))
    code, report, text = _report(cli, tmp_path, bundle, "--runtime", "oldest")
    assert code == 1
    sets = _sets(report)
    assert list(sets) == ["onnxruntime 1.17.0 CPU"], list(sets)  # the oldest of >=1.17 with a cp311 wheel
    runtime = sets["onnxruntime 1.17.0 CPU"]
    assert runtime["status"] == "fail"
    statuses = {c["graph"]: c["status"] for c in runtime["comparisons"]}
    assert statuses == {"baseline": "pass", "opset21": "not_assessed"}
    loads = [f for f in report["findings"] if f["id"] == "runtime.load"]
    assert len(loads) == 1 and loads[0]["severity"] == "error"
    # onnxruntime 1.17's own words, with the runtime named
    assert loads[0]["message"].startswith("[onnxruntime 1.17.0 CPU] opset21: onnxruntime cannot load the graph:")
    assert "ValidateOpsetForDomain" in loads[0]["message"] or "opset" in loads[0]["message"].lower()
    assert loads[0]["details"]["runtime"] == "onnxruntime 1.17.0 CPU"
    assert {c["graph"]: c["status"] for c in report["comparisons"]}["opset21"] == "pass"  # this machine's loads it
    assert "rules in each runtime" in text
    # The report with its runtime sets reads back typed as itself.
    again = BundleReport.from_dict(report)
    assert json_figures(again.to_dict()) == report
    assert [r.status for r in again.runtimes] == ["fail"]


def test_a_sound_bundle_passes_on_oldest_and_newest_then_offline_from_the_cache(
    cli: Cli, runtime_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from checker.runtimes.envs import index_versions

    bundle = write_bundle(tmp_path / "b", linear_model(), manifest())
    newest = str(max(v for v in index_versions("onnxruntime", []) if not v.is_prerelease and v.major < 2))
    code, report, _ = _report(cli, tmp_path, bundle, "--runtime", "oldest", "--runtime", "newest")
    assert code == 0
    assert {k: v["status"] for k, v in _sets(report).items()} == {
        "onnxruntime 1.17.0 CPU": "pass",
        f"onnxruntime {newest} CPU": "pass",
    }
    # Offline: the versions come from the cache, nothing is installed; a package index that cannot be
    # reached would fail any attempt.
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    code, offline, _ = _report(cli, tmp_path, bundle, "--offline", "--runtime", "oldest", "--runtime", "newest")
    assert code == 0
    assert list(_sets(offline)) == list(_sets(report))
    for name, runtime in _sets(offline).items():
        assert runtime["comparisons"] == _sets(report)[name]["comparisons"]


def test_the_openvino_provider_is_compared_with_the_cpu(cli: Cli, runtime_cache: Path, tmp_path: Path) -> None:
    from bundlekit import EXAMPLE

    bundle = tmp_path / "mobilenet-tiny"
    shutil.copytree(EXAMPLE, bundle)
    text = (bundle / "bundle.yaml").read_text()
    declared = "execution_providers: [OpenVINOExecutionProvider, CUDAExecutionProvider, CPUExecutionProvider]"
    (bundle / "bundle.yaml").write_text(text.replace("execution_providers: [CPUExecutionProvider]", declared))
    assert lock(bundle).ok  # the declared providers are part of the release's digest
    code, report, _ = _report(cli, tmp_path, bundle, "--runtime", "onnxruntime-openvino==1.24.1")
    installs = [f for f in report["findings"] if f["id"] == "runtime.install"]
    if installs and "No matching distribution" in installs[0]["message"]:
        pytest.skip(f"onnxruntime-openvino has no wheel for this Python here: {installs[0]['message']}")
    assert code == 0, [f["message"] for f in report["findings"] if f["severity"] == "error"]
    sets = _sets(report)
    assert list(sets) == ["onnxruntime-openvino 1.24.1 CPU", "onnxruntime-openvino 1.24.1 OpenVINO"]
    openvino = sets["onnxruntime-openvino 1.24.1 OpenVINO"]
    assert openvino["provider"] == "OpenVINOExecutionProvider"
    against = [(c["graph"], c["against"]) for c in openvino["comparisons"]]
    assert ("baseline", "CPUExecutionProvider") in against and ("int8", "CPUExecutionProvider") in against
    cpu_drift = next(c for c in openvino["comparisons"] if c["graph"] == "int8" and c["against"] == "reference")
    figures = cpu_drift["rules"][1]["cases"]  # score_drift, by OpenVINO: real figures of its own
    assert len(figures) == 8 and all(isinstance(v, float) for v in figures.values())
    missing = [f for f in report["findings"] if f["id"] == "runtime.provider" and f["severity"] == "info"]
    assert any("CUDAExecutionProvider is not available there" in f["message"] for f in missing)

    from checker.render.markdown import render

    markdown = render(Report.from_dict({"checker_version": "0", "status": "pass", "bundles": [report]}))
    table = markdown[markdown.index("#### Rules in each runtime") :].splitlines()[2:7]
    assert table[0].startswith("| runtime | status | baseline logits/allclose |")
    assert "int8 vs CPU logits/score_drift" in table[0]
    assert table[2].startswith("| this checker's onnxruntime | pass |")
    assert table[4].startswith("| onnxruntime-openvino 1.24.1 OpenVINO | pass | ✓ ")


def test_sharded_runtime_reports_merge_into_the_unsharded_one(cli: Cli, runtime_cache: Path, tmp_path: Path) -> None:
    from bundlekit import EXAMPLE

    bundle = tmp_path / "mobilenet-tiny"
    shutil.copytree(EXAMPLE, bundle)
    _, whole, _ = _report(cli, tmp_path, bundle, "--runtime", "oldest")
    paths = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}.json"
        code, _, err = cli("verify", bundle, "--runtime", "oldest", "--shard", f"{k}/2", "--format", "json", "-o", out)
        assert code == 0, err
        paths.append(out)
    code, _, err = cli("report", "merge", *paths, "--format", "json", "-o", tmp_path / "merged.json")
    merged = json.loads((tmp_path / "merged.json").read_text())["bundles"][0]
    assert code == 0, err
    assert _sets(merged) == _sets(whole)
    assert merged["comparisons"] == whole["comparisons"]


def test_a_runtime_that_does_not_exist_is_a_finding(cli: Cli, runtime_cache: Path, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", linear_model(), manifest())
    code, report, _ = _report(cli, tmp_path, bundle, "--runtime", "0.0.1")
    assert code == 1
    found = [f for f in report["findings"] if f["id"] == "runtime.install"]
    assert found and "onnxruntime 0.0.1 could not be installed" in found[0]["message"]
    assert yaml.safe_load((bundle / "bundle.yaml").read_text())  # the bundle is left as it was
