"""answers.near_threshold names the fragile reference decisions; answers.vacuous says a rule had nothing to judge;
a rule on an answer the manifest does not declare, or of another kind, is a manifest.schema error at its line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bundlekit import linear_model, manifest, write_bundle

from checker.context import Options
from checker.verify import verify_bundle


def bundle(tmp_path: Path, answers: list[dict[str, Any]], rules: list[dict[str, Any]]) -> Path:
    data = manifest(answers=answers)
    data["comparison"]["rules"] = rules
    return write_bundle(tmp_path / "b", linear_model(), data)


def findings(root: Path, fid: str) -> list[Any]:
    return [f for f in verify_bundle(root, Options(gain_budget_s=0.0)).findings if f.id == fid]


DECISION = {"name": "alarm", "kind": "decision", "from": "y", "steps": [{"select": {"axis": -1, "index": 0}}],
            "decode": {"threshold": 0.0, "above": "alarm", "below": "quiet", "margin": 100.0}}  # fmt: skip


def test_reference_decisions_near_the_threshold_are_named(tmp_path: Path) -> None:
    root = bundle(tmp_path, [DECISION], [{"answer": "alarm", "check": "decision"}])
    (near,) = findings(root, "answers.near_threshold")
    assert near.severity.value == "info" and "within 100 of the threshold 0" in near.message
    assert near.details["cases"] == ["c0", "c1", "c2"] and near.line is not None


def test_a_rule_whose_reference_shows_nothing_passes_vacuously_and_says_so(tmp_path: Path) -> None:
    top = {"name": "top", "kind": "classes", "from": "y", "decode": {"top_k": 1, "min_score": 1e6}}
    root = bundle(tmp_path, [top], [{"answer": "top", "check": "classes"}])
    report = verify_bundle(root, Options(gain_budget_s=0.0))
    (vacuous,) = [f for f in report.findings if f.id == "answers.vacuous"]
    assert vacuous.severity.value == "warning" and "passes vacuously" in vacuous.message
    assert report.comparisons[0].rules[0].passed


def test_a_rule_on_an_unknown_answer_or_the_wrong_kind_is_a_schema_error(tmp_path: Path) -> None:
    rules = [{"answer": "nothing", "check": "decision"}, {"answer": "alarm", "check": "classes"}]
    found = findings(bundle(tmp_path, [DECISION], rules), "manifest.schema")
    assert any("no answer is named 'nothing' (answers: alarm)" in f.message for f in found)
    assert any("answer 'alarm' is of kind decision; check 'classes'" in f.message for f in found)


def test_an_answer_the_outputs_do_not_fit_is_invalid_at_its_line(tmp_path: Path) -> None:
    wrong = {**DECISION, "steps": [{"select": {"axis": -1, "index": 9}}]}
    (invalid,) = findings(bundle(tmp_path, [wrong], [{"answer": "alarm", "check": "decision"}]), "answers.invalid")
    assert "index 9 is outside axis 1 of size 3" in invalid.message and invalid.line is not None
