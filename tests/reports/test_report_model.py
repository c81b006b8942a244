"""A report read back from its JSON is the report that was written: `X.from_dict(x.to_dict()) == x`.

On real `checker verify` reports of a bundle on disk: a float model and a real int8 quantization that passes, and
one quantized from badly scaled calibration that fails on any CPU (so its comparison carries a diagnosis);
whole, as one shard of two, and with runtime sets as the runtimes stage builds them (a report of a real
`--runtime` run reads back as itself in tests/runtimes/test_runtime_runs.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from modelkit import good_and_miscalibrated_bundle

from checker.context import Options
from checker.findings import Finding
from checker.render import render
from checker.reports.diff import diff
from checker.reports.model import Adapter, BundleReport, Fingerprint, Report, RuntimeSet
from checker.sharding import parse_shard
from checker.verify import verify_bundle


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return good_and_miscalibrated_bundle(tmp_path_factory.mktemp("bundle"))


def _through_json(report: Report) -> Report:
    """The report as `--format json` writes it, read back."""
    return Report.from_dict(json.loads(render("json", report.to_dict())))


def _with_runtime(bundle: BundleReport) -> BundleReport:
    """The bundle with the runtime sets the runtimes stage adds: one judged, one that could not install; and an
    engine platform's, with its fingerprint."""
    webgpu = Fingerprint(
        "browser-webgpu", "onnxruntime-web", "1.31.1", "webgpu", build="ort.webgpu.min.mjs",
        browser="Chromium 156.0.8078.114", cross_origin_isolated=True, wasm_threads=1,
        adapter=Adapter("google", "swiftshader", fallback=True), placed={"WebGpuExecutionProvider": 7},
    )  # fmt: skip
    platform = {"name": "browser-webgpu", "arch": "wasm32", "class": "browser-webgpu", "engine": "browser-webgpu",
                "features": [], "how": webgpu.words(), "cpu_features": []}  # fmt: skip
    bundle.runtimes = [
        RuntimeSet("onnxruntime 1.17.0 CPU", "onnxruntime", "1.17.0", "CPUExecutionProvider", bundle.comparisons),
        RuntimeSet("onnxruntime 9.9.9 CPU", "onnxruntime", "9.9.9", "CPUExecutionProvider", error="not installed"),
    ]
    engine = RuntimeSet("platform browser-webgpu", "onnxruntime-web", "1.31.1", "webgpu", bundle.comparisons)
    engine.platform, engine.fingerprint = platform, webgpu
    bundle.runtimes.append(engine)
    return bundle


def test_a_verify_report_reads_back_as_itself(bundle: Path) -> None:
    whole = verify_bundle(bundle, Options())
    shard = verify_bundle(bundle, Options(shard=parse_shard("1/2")))
    runtimes = _with_runtime(verify_bundle(bundle, Options()))
    report = Report("1.0", [whole, shard, runtimes], environment={"python": "3.11"}, context={"pull_request": 2})
    bad = next(c for c in whole.comparisons if c.graph == "int8-bad")
    assert bad.status == "fail" and bad.diagnosis is not None  # the parts that must survive are there
    assert shard.shard is not None and shard.shard["count"] == 2
    report.changes = diff(report.to_dict(), report.to_dict())

    loaded = _through_json(report)
    assert loaded == report
    assert loaded.to_dict() == report.to_dict()  # with what equality leaves out: the findings' details
    assert render("json", loaded.to_dict()) == render("json", report.to_dict())
    assert [b.status() for b in loaded.bundles] == ["fail", "fail", "fail"]


def test_a_strict_report_of_the_example_reads_back_as_itself(example: Path) -> None:
    report = Report("1.0", [verify_bundle(example, Options(strict=True))], strict=True)
    loaded = _through_json(report)
    assert loaded == report and loaded.to_dict() == report.to_dict()
    assert loaded.status == report.status


def test_a_finding_reads_back_with_its_details() -> None:
    finding = Finding.from_dict({"id": "labels.count", "severity": "error", "message": "m", "line": 3,
                                 "details": {"expected": 10}})  # fmt: skip
    assert finding.to_dict() == {
        "id": "labels.count", "severity": "error", "message": "m", "line": 3, "details": {"expected": 10}
    }  # fmt: skip


def test_merged_shards_are_a_typed_report_that_reads_back_as_itself(bundle: Path) -> None:
    from checker.reports.merge import merge_reports

    shards = [
        _through_json(Report("1.0", [verify_bundle(bundle, Options(shard=parse_shard(f"{k}/2")))])) for k in (1, 2)
    ]
    whole = verify_bundle(bundle, Options())
    merged = merge_reports(shards)
    (joined,) = merged.bundles
    assert joined.merged_from == 2 and joined.shard is None and merged.created_at is None
    assert [c.to_dict() for c in joined.comparisons] == [c.to_dict() for c in whole.comparisons]
    assert _through_json(merged) == merged
