"""A report read back from its JSON is the report that was written: `X.from_dict(x.to_dict()) == x`.

On real `checker verify` reports of a bundle on disk: a float model and a real int8 quantization that passes, and
one quantized from badly scaled calibration that fails on any CPU (so its comparison carries a diagnosis);
whole, as one shard of two, and with runtime sets as the runtimes stage builds them (a report of a real
`--runtime` run reads back as itself in tests/runtimes/test_runtime_runs.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from modelkit import good_and_miscalibrated_bundle

from checker.context import Options
from checker.findings import Finding
from checker.render import render
from checker.reports.diff import diff
from checker.reports.model import Adapter, BundleReport, Fingerprint, Report, RuntimeSet
from checker.reports.parts.changes import (
    Base,
    BundleChange,
    Cases,
    Changes,
    Compared,
    Edit,
    Findings,
    FoundChange,
    RuleChange,
    Verdicts,
)
from checker.reports.parts.gains import Gain, Latency, PairedTiming, Size
from checker.reports.parts.judged import Diagnosis, Interval, TaskStatistics, TensorScore
from checker.reports.parts.placement import (
    FixedShape,
    Forbid,
    NativeFigures,
    Placement,
    PlatformRecord,
    ProviderNodes,
    Usability,
)
from checker.reports.parts.runs import JudgedShard, Validation
from checker.reports.parts.values import json_figures
from checker.sharding import parse_shard
from checker.verify import verify_bundle

SLOW = HealthCheck.too_slow  # a verdict does not depend on how fast this machine draws examples


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return good_and_miscalibrated_bundle(tmp_path_factory.mktemp("bundle"))


def _through_json(report: Report) -> Report:
    """The report as `--format json` writes it, read back."""
    return Report.from_dict(json.loads(render("json", report)))


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
    engine.platform, engine.fingerprint = PlatformRecord.from_dict(platform), webgpu
    bundle.runtimes.append(engine)
    return bundle


def test_a_verify_report_reads_back_as_itself(bundle: Path) -> None:
    whole = verify_bundle(bundle, Options())
    shard = verify_bundle(bundle, Options(shard=parse_shard("1/2")))
    runtimes = _with_runtime(verify_bundle(bundle, Options()))
    report = Report("1.0", [whole, shard, runtimes], environment={"python": "3.11"}, context={"pull_request": 2})
    bad = next(c for c in whole.comparisons if c.graph == "int8-bad")
    assert bad.status == "fail" and bad.diagnosis is not None  # the parts that must survive are there
    assert shard.shard is not None and shard.shard.count == 2
    report.changes = diff(report, report)

    loaded = _through_json(report)
    assert loaded == report
    assert loaded.to_dict() == report.to_dict()  # with what equality leaves out: the findings' details
    assert render("json", loaded) == render("json", report)
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


def test_a_validation_run_and_a_loosened_rule_read_back_as_themselves(example: Path) -> None:
    """The validation command as --run-validation runs it (once started, once not), and what changed since a
    base whose rule was tighter: each part of the report through its JSON and back."""
    manifest = example / "bundle.yaml"
    text = manifest.read_text(encoding="utf-8")
    ran = verify_bundle(example, Options(run_validation=True, gain_budget_s=0.0))
    manifest.write_text(text.replace("command: checker verify bundle.yaml", "command: no-such-program --x"))
    not_started = verify_bundle(example, Options(run_validation=True, gain_budget_s=0.0))
    assert ran.validation is not None and ran.validation.started and ran.validation.exit_code == 0
    assert not_started.validation is not None and not not_started.validation.started
    assert ran.gains and ran.placement  # the variant's size, and where the declared provider put the nodes
    head = Report("1.0", [ran, not_started])
    base = _through_json(head)
    rule = next(r for c in base.bundles[0].comparisons for r in c.rules if r.check == "score_drift")
    rule.params["max"], rule.measured = 0.005, 0.02
    head.changes = diff(base, head)
    assert head.changes.bundles[0].loosened == ["int8 logits score_drift max 0.005 → 0.05 (loosened)"]
    assert _through_json(head) == head


FIGURE = st.floats(allow_nan=False)  # NaN is no equal of itself; infinities are written "inf" and read back
WORD = st.text(max_size=12)
FINITE = st.floats(allow_nan=False, allow_infinity=False)  # what changed is measured in finite figures only
SCALAR = st.none() | st.booleans() | st.integers() | FINITE | WORD
COUNT = st.integers(0, 10**6)
INTERVAL = st.builds(Interval, low=FIGURE, high=FIGURE, method=WORD, confidence=FIGURE)
SCORE = st.builds(
    TensorScore, tensor=WORD, variant_tensor=WORD, node=st.none() | WORD, op_type=WORD,
    exclude=st.lists(WORD, max_size=2), sqnr_db=FIGURE, drop_db=FIGURE,
)  # fmt: skip
STATISTICS = st.builds(TaskStatistics, items=COUNT, hits=COUNT, interval=INTERVAL) | st.builds(
    TaskStatistics, items=COUNT, hits=COUNT, interval=INTERVAL, other_hits=COUNT, lost=COUNT, gained=COUNT,
    mcnemar_p=FIGURE,
)  # fmt: skip
DIAGNOSIS = st.builds(
    Diagnosis, variant=WORD, case=WORD, min_db=FIGURE, compared=COUNT, unmatched=COUNT, groups=COUNT,
    first=st.none() | SCORE, worst=st.none() | SCORE, largest_drops=st.lists(SCORE, max_size=2),
    nodes_to_exclude=st.lists(WORD, max_size=2), summary=WORD,
)  # fmt: skip
TIMING = st.builds(
    PairedTiming, faster=FIGURE, interval=INTERVAL, rounds=COUNT, baseline_ms=FIGURE, variant_ms=FIGURE,
    elapsed_s=FIGURE, stopped=WORD,
)  # fmt: skip
LATENCY = st.builds(
    Latency, threads=WORD | st.dictionaries(WORD, COUNT, max_size=2), timing=st.none() | TIMING,
    skipped=st.none() | WORD, not_device_figure=st.none() | WORD,
)  # fmt: skip
GAIN = st.builds(
    Gain, variant=WORD, size=st.builds(Size, baseline_bytes=COUNT, variant_bytes=COUNT, smaller=FIGURE),
    latency=LATENCY,
)  # fmt: skip
NODES = st.builds(ProviderNodes, nodes=COUNT, partitions=COUNT, ops=st.dictionaries(WORD, COUNT, max_size=3))
PLACEMENT = st.builds(
    Placement, runtime=WORD, provider=WORD, graph=WORD, nodes=COUNT,
    providers=st.dictionaries(WORD, NODES, max_size=2), measured_by=st.none() | WORD,
    optimization_level=st.none() | WORD, fallback=st.none() | st.lists(WORD), fallback_count=st.none() | COUNT,
    forbid=st.none() | st.builds(Forbid, opened=st.booleans(), error=st.none() | WORD),
)  # fmt: skip
USABILITY = st.builds(
    Usability, graph=WORD, provider=WORD, ep=WORD, nodes=COUNT, supported=COUNT, partitions=COUNT,
    suitability=WORD, partition_sizes=st.lists(COUNT, max_size=3), unsupported_ops=st.lists(WORD, max_size=3),
    recommendation=WORD, log=st.lists(WORD, max_size=2), fixed_shape_suitability=st.none() | WORD,
    fixed_shape=st.none() | st.builds(FixedShape, supported=COUNT, partitions=COUNT, recommendation=WORD),
)  # fmt: skip
NATIVE = st.builds(NativeFigures, differ=COUNT, of=COUNT, max_abs=FIGURE, cases=st.none() | COUNT)
PLATFORM = st.builds(
    PlatformRecord, name=WORD, arch=WORD, cpu_class=WORD, how=WORD, cpu_features=st.lists(WORD, max_size=3),
    level=st.none() | WORD, features=st.lists(WORD, max_size=2), machine=st.none() | WORD,
    onnxruntime=st.none() | WORD, session_config=st.none() | st.dictionaries(WORD, WORD, max_size=2),
    against_native=st.none() | st.dictionaries(WORD, NATIVE, max_size=2), engine=st.none() | WORD,
    envelope=st.none() | st.lists(st.fixed_dictionaries({"graph": WORD, "point": WORD, "status": WORD}), max_size=2),
)  # fmt: skip
VALIDATION = st.builds(
    Validation, command=st.lists(WORD, min_size=1, max_size=3), timeout_s=FIGURE, exit_code=st.none() | COUNT,
    timed_out=st.booleans(), started=st.booleans(), start_error=st.none() | WORD, duration_s=FIGURE,
    stdout_tail=WORD, stderr_tail=WORD,
)  # fmt: skip
RULE_CHANGE = st.builds(
    RuleChange, graph=st.none() | WORD, against=st.none() | WORD, output=st.none() | WORD, check=st.none() | WORD,
    base=st.none() | FINITE, head=st.none() | FINITE, delta=st.none() | FINITE, crossed=st.none() | WORD,
    params=st.dictionaries(WORD, SCALAR, max_size=2), direction=st.sampled_from(["max", "min"]),
    threshold=st.none() | FINITE, base_threshold=st.none() | FINITE, moved=st.none() | st.booleans(),
    base_passed=st.none() | st.booleans(), head_passed=st.none() | st.booleans(), tags=st.lists(WORD, max_size=2),
    line=st.none() | COUNT, rule=st.none() | WORD, effect=st.none() | WORD,
    edits=st.lists(st.builds(Edit, param=WORD, base=SCALAR, head=SCALAR, effect=WORD), max_size=2),
)  # fmt: skip
FOUND = st.builds(
    FoundChange, id=WORD, severity=st.none() | WORD, message=st.none() | WORD, file=st.none() | WORD,
    line=st.none() | COUNT,
)  # fmt: skip
COMPARED = st.builds(
    Compared, pieces=st.lists(WORD, max_size=2), rules=st.lists(RULE_CHANGE, max_size=2),
    findings=st.builds(Findings, new=st.lists(FOUND, max_size=2), resolved=st.lists(FOUND, max_size=2)),
    cases=st.builds(Cases, added=st.lists(WORD, max_size=2), removed=st.lists(WORD, max_size=2)),
    loosened=st.lists(WORD, max_size=2),
)  # fmt: skip
BUNDLE_CHANGE = st.builds(
    BundleChange, path=WORD, name=st.none() | WORD, state=WORD,
    status=st.builds(Verdicts, base=st.none() | WORD, head=st.none() | WORD), compared=st.none() | COMPARED,
)  # fmt: skip
CHANGES = st.builds(Changes, base=st.builds(Base, *[st.none() | WORD] * 4), bundles=st.lists(BUNDLE_CHANGE, max_size=2))
PARTS: dict[type, st.SearchStrategy[Any]] = {
    TaskStatistics: STATISTICS, Diagnosis: DIAGNOSIS, Gain: GAIN, Placement: PLACEMENT, Usability: USABILITY,
    PlatformRecord: PLATFORM, Validation: VALIDATION, JudgedShard: st.builds(JudgedShard, index=COUNT, count=COUNT,
    cases=st.lists(WORD, max_size=3)), Changes: CHANGES,
}  # fmt: skip


@pytest.mark.parametrize("kind", list(PARTS), ids=lambda kind: kind.__name__)
def test_every_part_of_the_report_reads_back_through_json_as_itself(kind: type) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=[SLOW])
    @given(PARTS[kind])
    def round_trip(part: Any) -> None:
        written = json.loads(json.dumps(json_figures(part.to_dict()), allow_nan=False))
        assert kind.from_dict(written) == part  # type: ignore[attr-defined]

    round_trip()
