"""A pull request that loosens a rule to get green: the example bundle whose int8 variant's score_drift max
went from 0.005 (the base, failing on the variant's real drift) to 0.05 (the head, passing).

Both reports are real `checker verify` runs of the same bundle path. The diff must pair the two rules as one
edited rule, say the edit loosened it with both values, credit it to the rules (not the graph), show it
under the verdict in every renderer, and fail it on request (--fail-on-loosened).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from bundlekit import EXAMPLE, run_in

from checker.compare.metrics import CHECKS
from checker.manifest.schema import load
from checker.render import render
from checker.reports.diff import diff
from checker.reports.model import Report
from checker.reports.parts.changes import BundleChange

LOOSENED = "int8 logits score_drift max 0.005 → 0.05 (loosened)"
# The head passes at 0.05 a figure the base's 0.005 fails: the pass rests on the loosening, and says so first.
PASSES = "passes only because int8 logits score_drift was loosened: the head's "
BASES = " fails the base's rule (max 0.005)"


def resting(said: list[str]) -> bool:
    """The loosenings are the pass that rests on the edit, then the edit itself."""
    return len(said) == 2 and said[0].startswith(PASSES) and said[0].endswith(BASES) and said[1] == LOOSENED


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("loosened")
    bundle = root / "m"
    shutil.copytree(EXAMPLE, bundle)
    manifest = bundle / "bundle.yaml"
    text = manifest.read_text(encoding="utf-8")
    assert "check: score_drift, max: 0.05," in text
    manifest.write_text(text.replace("check: score_drift, max: 0.05,", "check: score_drift, max: 0.005,"), "utf-8")
    assert run_in(root, "lock", "m") == 0
    assert run_in(root, "verify", "m", "--format", "json", "--output", "base.json") == 1  # the real drift is 0.017
    for name in ("bundle.yaml", "bundle.sha256"):
        shutil.copy(EXAMPLE / name, bundle / name)
    assert run_in(root, "verify", "m", "--format", "json", "--output", "head.json") == 0
    return root


def load_json(root: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / name).read_text(encoding="utf-8"))
    return data


def changes_of(base: dict[str, Any], head: dict[str, Any]) -> dict[str, Any]:
    """What `diff` finds between two reports as their files hold them, in the report's JSON form."""
    return diff(Report.from_dict(base), Report.from_dict(head)).to_dict()


def with_changes(base: dict[str, Any], head: dict[str, Any]) -> Report:
    """The head report holding what changed since the base."""
    report = Report.from_dict(head)
    report.changes = diff(Report.from_dict(base), report)
    return report


def changed_rules(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in BundleChange.from_dict(entry).changed_rules]


def drift_rules(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in entry["rules"] if r["check"] == "score_drift"]


def visible_lines(markdown: str) -> list[str]:
    """The lines a reader sees, top down: no hidden marker, no blank line."""
    return [line for line in re.sub(r"<!--.*?-->", "", markdown, flags=re.S).splitlines() if line.strip()]


def test_an_edited_threshold_is_one_rule_loosened_and_credited_to_the_rules(repo: Path) -> None:
    changes = changes_of(load_json(repo, "base.json"), load_json(repo, "head.json"))
    report = {**load_json(repo, "head.json"), "changes": changes}
    jsonschema.validate(report, load("report"))
    (entry,) = changes["bundles"]
    (rule,) = drift_rules(entry)  # not one removed and one added
    assert rule["rule"] == "edited" and rule["effect"] == "loosened"
    assert rule["edits"] == [{"param": "max", "base": 0.005, "head": 0.05, "effect": "loosened"}]
    assert rule["crossed"] == "now passes" and rule["line"] == 103
    assert entry["pieces"] == ["rules"]  # not the graph: the variant's graph file and fields are unchanged
    assert resting(entry["loosened"])


def test_the_way_back_is_tightened_and_nothing_is_loosened(repo: Path) -> None:
    changes = changes_of(load_json(repo, "head.json"), load_json(repo, "base.json"))
    (entry,) = changes["bundles"]
    (rule,) = drift_rules(entry)
    assert rule["effect"] == "tightened" and rule["edits"][0]["effect"] == "tightened"
    assert rule["crossed"] == "now fails" and entry["loosened"] == []


def test_a_removed_rule_and_a_removed_case_are_loosening(repo: Path) -> None:
    base, head = load_json(repo, "head.json"), load_json(repo, "head.json")
    comparisons = head["bundles"][0]["comparisons"]
    drift = next(c for c in comparisons if c["against"] == "baseline")
    drift["rules"] = []  # the variant's cosine drift rule deleted
    for comparison in comparisons:
        for r in comparison["rules"]:
            r["cases"].pop("dusk", None)
    (entry,) = changes_of(base, head)["bundles"]
    assert entry["loosened"] == ["int8 (vs baseline) logits cosine removed (loosened)", "case dusk removed (loosened)"]
    removed = next(r for r in entry["rules"] if r.get("rule") == "removed")
    assert removed["effect"] == "loosened" and removed["check"] == "cosine"


def test_a_min_type_param_and_the_pass_rate_loosen_downwards(repo: Path) -> None:
    base, head = load_json(repo, "head.json"), load_json(repo, "head.json")
    cosine = next(c for c in head["bundles"][0]["comparisons"] if c["against"] == "baseline")["rules"][0]
    cosine["params"]["min"], cosine["min_pass_rate"] = 0.9, 0.75
    topk = head["bundles"][0]["comparisons"][0]["rules"][1]
    topk["params"]["min_agreement"] = 1.0  # the same value: no edit
    (entry,) = changes_of(base, head)["bundles"]
    (rule,) = [r for r in entry["rules"] if r.get("rule")]
    assert [(e["param"], e["effect"]) for e in rule["edits"]] == [("min", "loosened"), ("min_pass_rate", "loosened")]
    assert entry["loosened"] == [
        "int8 (vs baseline) logits cosine min 0.99 → 0.9 (loosened)",
        "int8 (vs baseline) logits cosine min_pass_rate 1 → 0.75 (loosened)",
    ]


def test_every_rule_kind_declares_which_way_each_parameter_loosens() -> None:
    for check in CHECKS.values():
        params = {*check.defaults, *check.required, *check.optional}
        assert set(check.looser) == params, check.name
        assert set(check.looser.values()) <= {"higher", "lower", None}
        if check.threshold_key is not None:  # the threshold loosens against its direction
            assert check.looser[check.threshold_key] == ("higher" if check.direction == "max" else "lower")


def test_jitter_below_the_printing_precision_is_no_change(repo: Path) -> None:
    base, head = load_json(repo, "head.json"), load_json(repo, "head.json")
    cosine = next(c for c in head["bundles"][0]["comparisons"] if c["against"] == "baseline")["rules"][0]
    cosine["measured"] -= 1.26e-10
    changes = changes_of(base, head)
    (entry,) = changes["bundles"]
    assert entry["state"] == "unchanged" and list(changed_rules(entry)) == []
    markdown = render("markdown", with_changes(base, head))
    assert "no change in pieces, figures or findings" in markdown and "e-10" not in markdown
    moved = copy.deepcopy(head)
    next(c for c in moved["bundles"][0]["comparisons"] if c["against"] == "baseline")["rules"][0]["measured"] -= 1e-5
    assert [r["check"] for r in changed_rules(changes_of(base, moved)["bundles"][0])] == ["cosine"]


def test_report_diff_says_loosened_under_the_verdict_in_text_json_and_markdown(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert run_in(repo, "report", "diff", "base.json", "head.json") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("PASS") and lines[1].startswith(f"loosened since the base: {PASSES}")
    assert re.search(rf"; {re.escape(LOOSENED)} \(bundle\.yaml line \d+\)$", lines[1])  # with the rule's line
    assert any(line.strip() == "int8 logits score_drift: max 0.005 -> 0.05 (loosened)" for line in lines)
    assert run_in(repo, "report", "diff", "base.json", "head.json", "--format", "json") == 0
    assert resting(json.loads(capsys.readouterr().out)["changes"]["bundles"][0]["loosened"])
    assert run_in(repo, "report", "diff", "base.json", "head.json", "--format", "markdown") == 0
    top = visible_lines(capsys.readouterr().out)[:3]
    assert any("loosened" in line and "0.005 → 0.05" in line for line in top), top


def test_verify_compare_to_puts_the_loosening_in_the_first_three_lines(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert run_in(repo, "verify", "m", "--compare-to", "base.json", "--format", "markdown", "--output", "c.md") == 0
    top = visible_lines((repo / "c.md").read_text(encoding="utf-8"))[:3]
    assert top[0].startswith("## ⚠️") and "only because a check was loosened" in top[0]  # not green
    assert any("loosened" in line and "score_drift max 0.005 → 0.05" in line for line in top), top


def test_fail_on_loosened_fails_the_bundle_with_the_rule_named(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("verify", "m", "--compare-to", "base.json", "--fail-on-loosened", "--format", "json", "--output", "f.json")
    assert run_in(repo, *argv) == 1
    out = load_json(repo, "f.json")
    (found,) = [f for f in out["bundles"][0]["findings"] if f["id"] == "rules.loosened"]
    assert found["severity"] == "error" and (found["file"], found["line"]) == ("bundle.yaml", 103)
    assert LOOSENED in found["message"]
    assert out["status"] == "fail" and out["changes"]["bundles"][0]["status"]["head"] == "fail"
    capsys.readouterr()
    assert run_in(repo, "report", "diff", "base.json", "head.json", "--fail-on-loosened") == 1
    assert "rules.loosened" in capsys.readouterr().out
    assert run_in(repo, "report", "diff", "head.json", "head.json", "--fail-on-loosened") == 0  # nothing loosened
    assert run_in(repo, "verify", "m", "--fail-on-loosened") == 2  # nothing to measure the loosening against
    assert "--fail-on-loosened needs --compare-to" in capsys.readouterr().err


def test_two_rules_of_one_identity_written_in_another_order_changed_nothing(repo: Path) -> None:
    base = load_json(repo, "head.json")
    variant = next(c for c in base["bundles"][0]["comparisons"] if c["graph"] == "int8" and c["against"] == "reference")
    (drift,) = drift_rules(variant)
    loose = copy.deepcopy(drift)
    loose["params"]["max"], loose["measured"] = 2.0, 0.5  # a second, looser score_drift rule on the same output
    variant["rules"].append(loose)
    head = copy.deepcopy(base)
    moved = next(c for c in head["bundles"][0]["comparisons"] if c["graph"] == "int8" and c["against"] == "reference")
    moved["rules"].reverse()
    (entry,) = changes_of(base, head)["bundles"]
    assert entry["loosened"] == [] and not [r for r in entry["rules"] if r.get("rule")]


def test_the_k_of_topk_is_a_change_not_a_tightening(repo: Path) -> None:
    base, head = load_json(repo, "head.json"), load_json(repo, "head.json")
    topk = next(r for r in head["bundles"][0]["comparisons"][0]["rules"] if r["check"] == "topk")
    topk["params"]["k"] = 1 if topk["params"]["k"] != 1 else 3  # equal top-k sets are no easier at any k
    (entry,) = changes_of(base, head)["bundles"]
    (rule,) = [r for r in entry["rules"] if r.get("rule")]
    assert [e["effect"] for e in rule["edits"]] == ["changed"]


def test_with_several_bundles_each_loosening_names_its_bundles_path(repo: Path) -> None:
    """Two bundles of one release name, one of them loosened: the line under the verdict says which, by path."""
    from checker.render import markdown, text

    base, head = load_json(repo, "base.json"), load_json(repo, "head.json")
    for report in (base, head):
        twin = copy.deepcopy(report["bundles"][0])
        twin["path"] = "other/bundle.yaml"
        report["bundles"].append(twin)
    head["bundles"][1] = copy.deepcopy(base["bundles"][1])  # the twin unchanged
    report = with_changes(base, head)
    path = head["bundles"][0]["path"]
    said = text.render(report).splitlines()[1]
    assert said.startswith("loosened since the base: ") and f"{path}: {LOOSENED}" in said
    assert "other/bundle.yaml" not in said
    top = visible_lines(markdown.render(report))[1]
    assert f"{path}: {LOOSENED}" in top.replace("\\", "")
