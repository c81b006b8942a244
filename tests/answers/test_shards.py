"""Shards judge their share of the cases on answers; `checker report merge` joins them into the verdict one run
gives, with the answers that changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from answerkit import detector, write_detector_bundle
from test_detections import variant

from checker.context import Options
from checker.reports.merge import merge_reports
from checker.reports.model import Report
from checker.sharding import Shard
from checker.verify import verify_bundle

pytest.importorskip("PIL")


def test_merged_shards_give_the_whole_run_s_verdict_on_answers(tmp_path: Path) -> None:
    rules = [{"answer": "objects", "check": "detections", "iou": 0.5}]
    root = write_detector_bundle(
        tmp_path / "b", variants=[variant("weak", rules)], graphs={"weak.onnx": detector(weaken=6, by=0.4)}
    )
    whole = verify_bundle(root, Options(gain_budget_s=0.0))
    shards = [verify_bundle(root, Options(gain_budget_s=0.0, shard=Shard(k, 2))) for k in (1, 2)]
    merged = merge_reports([Report("x", bundles=[s]) for s in shards]).bundles[0]
    for mine, theirs in zip(merged.comparisons, whole.comparisons):
        assert [r.passed for r in mine.rules] == [r.passed for r in theirs.rules]
        assert [r.measured for r in mine.rules] == [r.measured for r in theirs.rules]
        assert mine.changes == theirs.changes
    failure = next(f.message for f in merged.findings if f.id == "comparison.rule")
    assert failure.startswith("weak loses 'person'")
