"""Task rules on a labelled set: accuracy and the paired accuracy drop, per slice, with their intervals."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from bundlekit import write_manifest
from taskkit import labelled_bundle

from checker import findings as F
from checker.compare.intervals import clopper_pearson, mcnemar_p, paired_drop, wilson
from checker.context import Options
from checker.manifest.schema import load
from checker.reports.model import Report
from checker.verify import verify_bundle

DROP = {"output": "logits", "check": "accuracy_drop", "k": 1, "max": 0.1}


def verified(root: Path) -> dict[str, Any]:
    whole = Report("0", [verify_bundle(root, Options(gain_budget_s=0.0))]).to_dict()
    jsonschema.validate(whole, load("report"))
    report: dict[str, Any] = whole["bundles"][0]
    return report


def rules_of(report: dict[str, Any], graph: str, against: str) -> list[dict[str, Any]]:
    return next(c["rules"] for c in report["comparisons"] if c["graph"] == graph and c["against"] == against)


def findings(report: dict[str, Any], fid: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == fid]


def test_a_slice_fails_while_the_aggregate_passes(tmp_path: Path) -> None:
    rules = [DROP, {**DROP, "tags": ["edge"]}, {**DROP, "tags": ["plain"]}]
    report = verified(labelled_bundle(tmp_path / "b", 400, 10, rules))
    whole, edge, plain = rules_of(report, "int8", "baseline")
    assert whole["passed"] and whole["measured"] == pytest.approx(10 / 400)
    assert whole["statistics"]["lost"] == 10 and whole["statistics"]["gained"] == 0
    assert not edge["passed"] and edge["measured"] == 1.0 and edge["tags"] == ["edge"]
    assert len(edge["cases"]) == 10 and edge["statistics"]["interval"]["low"] > 0.1
    assert plain["passed"] and plain["measured"] == 0.0 and len(plain["cases"]) == 390
    failed = findings(report, F.COMPARISON_RULE)
    assert [f["details"]["check"] for f in failed] == ["accuracy_drop"]
    assert "on the cases tagged edge" in failed[0]["message"] and "10 labelled item(s)" in failed[0]["message"]
    assert findings(report, F.COMPARISON_TOO_FEW_CASES) == []  # 400 cases decide both claims
    baseline = rules_of(report, "baseline", "reference")[0]
    assert baseline["check"] == "accuracy" and baseline["measured"] == 1.0
    assert baseline["statistics"]["interval"]["method"] == "wilson"


def test_too_few_cases_warns_on_eight_and_names_the_interval(tmp_path: Path) -> None:
    report = verified(labelled_bundle(tmp_path / "b", 8, 0, [DROP]))
    assert rules_of(report, "int8", "baseline")[0]["passed"]
    warned = findings(report, F.COMPARISON_TOO_FEW_CASES)
    assert [w["details"]["check"] for w in warned] == ["accuracy", "accuracy_drop"]
    assert all(w["severity"] == "warning" for w in warned)
    assert "wilson" in warned[0]["message"] and "McNemar" in warned[1]["message"]
    assert warned[1]["details"]["items"] == 8


def edit_cases(root: Path, edit: Callable[[list[dict[str, Any]]], None]) -> Path:
    data = yaml.safe_load((root / "bundle.yaml").read_text(encoding="utf-8"))
    edit(data["comparison"]["cases"])
    return write_manifest(root, data).parent


def by_index(cases: list[dict[str, Any]]) -> None:
    for entry in cases:
        entry["label"] = int(entry["label"].removeprefix("class-"))


def test_relative_drop_and_labels_by_index(tmp_path: Path) -> None:
    root = edit_cases(labelled_bundle(tmp_path / "b", 40, 4, [{**DROP, "relative": True, "max": 0.05}]), by_index)
    (rule,) = rules_of(verified(root), "int8", "baseline")
    assert not rule["passed"] and rule["measured"] == pytest.approx(4 / 40)


def test_a_case_without_a_label_fails_the_rule_and_says_so(tmp_path: Path) -> None:
    root = edit_cases(labelled_bundle(tmp_path / "b", 6, 0, [DROP]), lambda cases: cases[1].pop("label"))
    report = verified(root)
    (rule,) = rules_of(report, "baseline", "reference")
    assert not rule["passed"] and "case 'c001': the case has no label" in rule["note"]
    assert "c001" in findings(report, F.COMPARISON_RULE)[0]["message"]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"tags": []}, "'tags' must be a non-empty list"),
        ({"min_pass_rate": 0.5}, "takes no parameter 'min_pass_rate'"),
        ({"relative": "yes"}, "'relative' must be true or false"),
    ],
)
def test_task_rules_stated_wrongly_are_schema_errors(raw: dict[str, Any], problem: str) -> None:
    from checker.compare.rules import RuleError, parse_rule

    with pytest.raises(RuleError, match=problem):
        parse_rule({**DROP, **raw})


def test_the_intervals_agree_with_their_definitions() -> None:
    assert wilson(8, 8).low == pytest.approx(8 / (8 + 1.959963984540054**2))
    assert clopper_pearson(0, 8).high == pytest.approx(1 - 0.025 ** (1 / 8))
    assert clopper_pearson(5, 10).low == pytest.approx(0.187086028447, abs=1e-9)  # the beta quantile
    assert mcnemar_p(10, 0) == pytest.approx(2 * 0.5**10)
    assert mcnemar_p(3, 3) == 1.0
    drop = paired_drop(0, 0, 400)  # nothing discordant: bounded by the discordant share alone
    assert drop.low == -drop.high and drop.high == pytest.approx(1 - 0.0125 ** (1 / 400))


def test_the_report_shows_each_slice_with_its_interval(tmp_path: Path) -> None:
    from checker.render import markdown, text

    root = labelled_bundle(tmp_path / "b", 40, 4, [DROP, {**DROP, "tags": ["edge"]}])
    report = Report.from_dict({"checker_version": "0", "bundles": [verified(root)]})
    shown = text.render(report)
    assert "(tags: edge; 4 items, 95 %" in shown and "(40 items, 95 %" in shown
    assert "(tags: edge; 4 items, 95 %" in markdown.render(report)
