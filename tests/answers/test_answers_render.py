"""A reviewer reads what changed in the product's words before any tensor figure, in every format: the detector's
planted weak variant loses a box in one photo, and each renderer says so from the typed report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from answerkit import detector, write_detector_bundle

from checker.context import Options
from checker.render import render
from checker.reports.model import BundleReport, Report
from checker.verify import verify_bundle

pytest.importorskip("PIL")

RULES = [{"answer": "objects", "check": "detections", "iou": 0.5}]
COSINE = [{"output": "output0", "check": "cosine", "min": 0.999}]


def weak_report(root: Path) -> Report:
    entry: dict[str, Any] = {
        "name": "weak",
        "graph": {"path": "weak.onnx"},
        "derived_from": "baseline",
        "transform": {"tool": "onnx.helper", "version": "1", "settings": {"edit": "weak"}},
        "rules": RULES,
        "drift_rules": COSINE,
    }
    bundle: BundleReport = verify_bundle(
        write_detector_bundle(root, variants=[entry], graphs={"weak.onnx": detector(weaken=6, by=0.4)}),
        Options(gain_budget_s=0.0),
    )
    return Report("0.1.0", [bundle])


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return weak_report(tmp_path_factory.mktemp("weak") / "b")


def lost(report: Report) -> str:
    (change,) = report.bundles[0].comparisons[1].changes
    assert change.answer == "objects" and change.case == "photo-0" and change.change.startswith("loses 'person'")
    return f"weak {change.change} in case 'photo-0'"


def test_text_says_the_lost_box_before_the_rule_table(report: Report) -> None:
    out = render("text", report)
    words = lost(report)
    assert f"answer changed: {words}" in out
    table = out.index("answer 'objects'  detections")
    assert out.index(words) < table  # the product's words come before the figures


def test_markdown_lists_the_changed_answers_before_the_rule_table(report: Report) -> None:
    out = render("markdown", report)
    words = lost(report)
    assert f"- {words}" in out.replace("\\'", "'")
    assert out.index("Answers that changed:") < out.index("answer 'objects' detections")


def test_junit_fails_the_answer_rule_with_the_change_first(report: Report) -> None:
    root = ET.fromstring(render("junit", report))
    failed = {c.get("name"): c.find("failure") for c in root.iter("testcase") if c.find("failure") is not None}
    failure = failed["answer 'objects' detections"]
    assert failure is not None
    message = (failure.get("message") or "") + (failure.text or "")
    assert message.startswith(lost(report))


def test_json_holds_the_changes_and_decoded_answers_and_reads_back_as_itself(report: Report) -> None:
    data = json.loads(render("json", report))
    (bundle,) = data["bundles"]
    assert bundle["comparisons"][1]["changes"][0]["case"] == "photo-0"
    assert {a["case"] for a in bundle["answers"]} == {f"photo-{i}" for i in range(6)}
    again = BundleReport.from_dict(bundle)
    assert again.comparisons[1].changes == report.bundles[0].comparisons[1].changes
    assert again.answers == report.bundles[0].answers
    assert again.comparisons[1].rules[0].answer == "objects"


def test_a_rule_failed_by_its_score_drift_names_the_worst_case_and_marks_each_failing_case(tmp_path: Path) -> None:
    # Every box stays (recall and precision 1 on every case), but a score moves more than the rule allows: the
    # figures are alike, the cases are not, and no case may read as passing.
    entry: dict[str, Any] = {
        "name": "weak",
        "graph": {"path": "weak.onnx"},
        "derived_from": "baseline",
        "transform": {"tool": "onnx.helper", "version": "1", "settings": {"edit": "weak"}},
        "rules": [{"answer": "objects", "check": "detections", "iou": 0.5, "max_score_drift": 1e-9}],
    }
    graphs = {"weak.onnx": detector(weaken=6, by=0.01)}
    bundle = verify_bundle(write_detector_bundle(tmp_path, variants=[entry], graphs=graphs), Options(gain_budget_s=0.0))
    (rule,) = bundle.comparisons[1].rules
    assert not rule.passed and rule.case_notes and len(set(rule.cases.values())) == 1
    out = render("markdown", Report("0.1.0", [bundle]))
    [row] = [line for line in out.splitlines() if line.startswith("| ❌ | answer 'objects'")]
    assert row.endswith(f"| {rule.worst_case} | {round(rule.pass_rate * 100)}% |") and "all alike" not in row
    failing = [n for n in rule.cases if n in rule.case_notes]
    for name in failing:
        assert f"| {name} | 1 | ❌ |" in out
    # The diagnosis in a reviewer's words, its record's field names left to the JSON report.
    assert "<summary>Diagnosis</summary>" in out and "| found |" in out
    assert not any(f"| {key} |" in out for key in ("min_db", "groups", "unmatched", "first"))
