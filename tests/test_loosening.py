"""Every loosening named: one table of manifest edits that weaken a check, each reported as loosened and failed
by --fail-on-loosened; and a pass that rests on a loosening is not shown green."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from bundlekit import EXAMPLE

from checker.cli import main
from checker.manifest.schema import load
from checker.manifest.strength import settings
from checker.render.markdown import render
from checker.reports.diff import diff, fail_on_loosened
from checker.reports.model import BundleReport, Comparison, Report, RuleResult
from checker.reports.parts.settings import DeclaredSetting

Edit = Callable[[dict[str, Any]], None]


def base_manifest() -> dict[str, Any]:
    """The example's manifest with every kind of setting the table weakens declared."""
    data: dict[str, Any] = yaml.safe_load((EXAMPLE / "bundle.yaml").read_text(encoding="utf-8"))
    data["inputs"][0]["preprocessing"]["tolerance"] = 0.03
    runtime = data["runtime"]
    runtime["platforms"] = [{"name": "pi5", "arch": "aarch64", "features": ["dotprod"]}]
    runtime["optimization_levels"] = ["basic", "all"]
    runtime["execution_providers"] = ["CPUExecutionProvider"]
    runtime["fallback"] = "forbid"
    cases = data["comparison"]["cases"]
    cases[0]["label"] = "cat"
    cases[0]["tags"] = ["edge"]
    data["variants"][0]["expect"] = {"smaller": 2.0, "faster": 1.2}
    return data


def _every_raw(data: dict[str, Any]) -> None:
    for case in data["comparison"]["cases"]:
        case.pop("raw", None)


def _case(data: dict[str, Any]) -> dict[str, Any]:
    case: dict[str, Any] = data["comparison"]["cases"][0]
    return case


# (what the edit does, the edit, words the loosening must say)
TABLE: list[tuple[str, Edit, str]] = [
    ("tolerance raised", lambda d: d["inputs"][0]["preprocessing"].update(tolerance=0.42), "tolerance 0.03 → 0.42"),
    ("every raw removed", _every_raw, "raw inputs (input fidelity no longer checks them) removed"),
    ("a platform removed", lambda d: d["runtime"].pop("platforms"), "platforms (the release is no longer judged"),
    ("an optimization level removed", lambda d: d["runtime"].update(optimization_levels=["all"]),
     "optimization levels (no longer judged) removed: basic"),
    ("an execution provider removed", lambda d: d["runtime"].pop("execution_providers"), "execution providers"),
    ("fallback allowed", lambda d: d["runtime"].update(fallback="allow"), "runtime.fallback forbid → allow"),
    ("a label removed", lambda d: _case(d).pop("label"), "case labels (the task rules judge fewer cases)"),
    ("a tag removed", lambda d: _case(d).update(tags=[]), "case tags (the tagged rules' slices are narrower)"),
    ("a gain lowered", lambda d: d["variants"][0]["expect"].update(faster=1.0), "expect.faster 1.2 → 1"),
]  # fmt: skip


def bundle_of(data: dict[str, Any], rules: list[RuleResult] | None = None) -> BundleReport:
    found = [DeclaredSetting(s.key, s.value, s.way, 10 + i) for i, s in enumerate(settings(data))]
    comparisons = [Comparison("int8", "reference", rules)] if rules else []
    return BundleReport("models/m", "bundle.yaml", "m", "1", settings=found, comparisons=comparisons)


def rule(max_: float, measured: float, min_pass_rate: float = 1.0) -> RuleResult:
    passed = measured <= max_
    return RuleResult("logits", "score_drift", {"max": max_, "apply": "softmax"}, passed, 1.0 if passed else 0.0,
                      min_pass_rate, "portrait", measured, max_, measured, line=98)  # fmt: skip


def changed(base: BundleReport, head: BundleReport) -> Report:
    report = Report("0.1.0", [head])
    report.changes = diff(Report("0.1.0", [base]), report)
    return report


@pytest.mark.parametrize(("name", "edit", "said"), TABLE, ids=[t[0] for t in TABLE])
def test_each_weakening_edit_is_a_loosening_failed_by_fail_on_loosened(name: str, edit: Edit, said: str) -> None:
    data = base_manifest()
    head_data = copy.deepcopy(data)
    edit(head_data)
    report = changed(bundle_of(data), bundle_of(head_data))
    assert report.changes is not None
    (entry,) = report.changes.bundles
    assert any(said in s for s in entry.loosened), entry.loosened
    assert report.bundles[0].status() == "pass"
    fail_on_loosened(report)
    assert report.bundles[0].status() == "fail"
    (found,) = [f for f in report.bundles[0].findings if f.id == "rules.loosened"]
    assert said in found.message


def test_the_opposite_edits_are_not_loosenings() -> None:
    data = base_manifest()
    head_data = copy.deepcopy(data)
    head_data["inputs"][0]["preprocessing"]["tolerance"] = 0.01
    head_data["runtime"]["platforms"].append({"arch": "x86_64", "cpu": "x86-64-v3"})
    head_data["runtime"]["fallback"] = "forbid"
    head_data["variants"][0]["expect"]["faster"] = 1.5
    report = changed(bundle_of(data), bundle_of(head_data))
    assert report.changes is not None and report.changes.bundles[0].loosened == []


def test_min_pass_rate_lowered_is_a_loosening() -> None:
    data = base_manifest()
    report = changed(bundle_of(data, [rule(0.05, 0.01, 1.0)]), bundle_of(data, [rule(0.05, 0.01, 0.8)]))
    assert report.changes is not None
    assert "int8 logits score_drift min_pass_rate 1 → 0.8 (loosened)" in report.changes.bundles[0].loosened
    fail_on_loosened(report)
    assert report.bundles[0].status() == "fail"


def test_a_pass_that_rests_on_a_loosening_is_not_green() -> None:
    data = base_manifest()
    report = changed(bundle_of(data, [rule(0.05, 0.3545)]), bundle_of(data, [rule(0.4, 0.3545)]))
    assert report.changes is not None
    (entry,) = report.changes.bundles
    assert entry.passes_by_loosening == [
        "passes only because int8 logits score_drift was loosened: the head's 0.3545 fails the base's rule (max 0.05)"
    ]
    md = render(report)
    assert "✅" not in md.splitlines()[0] and "only because a check was loosened" in md.splitlines()[0]
    assert "the head's 0.3545 fails the base's rule" in md
    # A loosening the head does not need is named, and the verdict stays green.
    calm = changed(bundle_of(data, [rule(0.05, 0.01)]), bundle_of(data, [rule(0.4, 0.01)]))
    assert "✅" in render(calm).splitlines()[0]


def test_a_verified_bundle_names_its_loosened_settings_with_their_lines(tmp_path: Path) -> None:
    """End to end: `checker verify --compare-to` on the example with every raw deleted and the tolerance raised."""
    root = tmp_path / "models" / "m"
    shutil.copytree(EXAMPLE, root)
    manifest = root / "bundle.yaml"
    original = manifest.read_text(encoding="utf-8")
    lines = original.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip() == "kind: image")
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    manifest.write_text("".join([*lines[: at + 1], f"{indent}tolerance: 0.03\n", *lines[at + 1 :]]), encoding="utf-8")
    assert main(["lock", str(root)]) == 0
    base = tmp_path / "base.json"
    assert main(["verify", str(root), "--format", "json", "--output", str(base)]) == 0
    data = json.loads(base.read_text(encoding="utf-8"))
    jsonschema.validate(data, load("report"))
    assert {"key": "inputs.pixel_values.tolerance", "value": 0.03, "way": "higher", "line": at + 2} in data["bundles"][
        0
    ]["settings"]
    edited = manifest.read_text(encoding="utf-8").replace("tolerance: 0.03", "tolerance: 0.42")
    manifest.write_text("".join(line for line in edited.splitlines(keepends=True) if "raw:" not in line))
    assert main(["lock", str(root)]) == 0
    head = tmp_path / "head.json"
    code = main(["verify", str(root), "--compare-to", str(base), "--fail-on-loosened", "--format", "json",
                 "--output", str(head)])  # fmt: skip
    assert code == 1
    said = json.loads(head.read_text(encoding="utf-8"))["changes"]["bundles"][0]["loosened"]
    assert f"inputs.pixel_values.tolerance 0.03 → 0.42 (loosened, line {at + 2})" in said
    assert any(s.startswith("raw inputs (input fidelity no longer checks them) removed: case meadow") for s in said)


def case_rule(max_: float, figures: list[float], min_pass_rate: float) -> RuleResult:
    """A rule judged case by case: it passes when enough of its cases are within `max_`."""
    within = sum(f <= max_ for f in figures) / len(figures)
    cases: dict[str, float | None] = {f"case-{i}": f for i, f in enumerate(figures)}
    worst = max(figures)
    return RuleResult("logits", "score_drift", {"max": max_, "apply": "softmax"}, within >= min_pass_rate, within,
                      min_pass_rate, "case-0", worst, max_, worst, cases=cases, line=98)  # fmt: skip


def test_a_pass_that_rests_on_a_lowered_min_pass_rate_is_not_green() -> None:
    data = base_manifest()
    figures = [0.01, 0.2, 0.01, 0.3, 0.01]  # three of five within 0.05
    base, head = case_rule(0.05, figures, 0.9), case_rule(0.05, figures, 0.6)
    assert not base.passed and head.passed
    report = changed(bundle_of(data, [base]), bundle_of(data, [head]))
    assert report.changes is not None
    (entry,) = report.changes.bundles
    assert entry.passes_by_loosening == [
        "passes only because int8 logits score_drift was loosened: 3 of 5 cases pass the base's rule (max 0.05), "
        "which needs 90% of them"
    ]
    assert "✅" not in render(report).splitlines()[0]
    # Lowered where every case passes anyway: named as a loosening, and the pass does not rest on it.
    calm = changed(
        bundle_of(data, [case_rule(0.05, [0.01] * 5, 0.9)]), bundle_of(data, [case_rule(0.05, [0.01] * 5, 0.6)])
    )
    assert calm.changes is not None and calm.changes.bundles[0].passes_by_loosening == []
    assert "int8 logits score_drift min_pass_rate 0.9 → 0.6 (loosened)" in calm.changes.bundles[0].loosened


@pytest.mark.parametrize(
    ("edit", "fid", "said"),
    [
        (_every_raw, "inputs.fidelity", "raw inputs (input fidelity no longer checks them) removed"),
        (lambda d: d["inputs"][0]["preprocessing"].update(tolerance=0.42), "inputs.fidelity", "tolerance 0.03 → 0.42"),
        (lambda d: d["runtime"].pop("platforms"), "platform.kernel", "platforms (the release is no longer judged"),
    ],
    ids=["raw removed", "tolerance raised", "platform removed"],
)
def test_a_pass_that_rests_on_a_weakened_setting_is_not_green(edit: Edit, fid: str, said: str) -> None:
    from checker.findings import error

    data = base_manifest()
    head_data = copy.deepcopy(data)
    edit(head_data)
    base = bundle_of(data)
    base.add(
        [error(fid, "case 'meadow': the stored tensor differs from the one its raw file makes", "bundle.yaml", 40)]
    )
    report = changed(base, bundle_of(head_data))
    assert report.changes is not None
    (entry,) = report.changes.bundles
    (rests,) = entry.passes_by_loosening
    assert rests.startswith(f"passes only because {said}") or (
        rests.startswith("passes only because") and said in rests
    )
    assert rests.endswith(f": the base's {fid} error is gone with it") and len(rests) < 200  # whole under the verdict
    assert "✅" not in render(report).splitlines()[0]
    # The same edit where the base passed: named, and green.
    calm = changed(bundle_of(data), bundle_of(head_data))
    assert calm.changes is not None and calm.changes.bundles[0].passes_by_loosening == []


def test_each_loosening_under_the_verdict_links_to_its_line() -> None:
    from checker.render.links import Links

    data = base_manifest()
    head_data = copy.deepcopy(data)
    head_data["inputs"][0]["preprocessing"]["tolerance"] = 0.42
    report = changed(bundle_of(data, [rule(0.05, 0.3545)]), bundle_of(head_data, [rule(0.4, 0.3545)]))
    links = Links("https://github.com", "octo/models", "0123456789abcdef0123456789abcdef01234567")
    line = next(x for x in render(report, links=links).splitlines() if x.startswith("**⚠️ Checks loosened"))
    blob = "https://github.com/octo/models/blob/0123456789abcdef0123456789abcdef01234567/models/m/bundle.yaml"
    assert f"]({blob}#L98)" in line  # the rule's line
    tolerance = next(s for s in bundle_of(head_data).settings if s.key.endswith("tolerance"))
    assert f"]({blob}#L{tolerance.line})" in line  # the setting's line
    # Without links the rule's line is still named.
    plain = next(x for x in render(report).splitlines() if x.startswith("**⚠️ Checks loosened"))
    assert "(bundle.yaml line 98)" in plain
    # The text report names it too.
    from checker.render.text import render as render_text

    said = next(x for x in render_text(report, colour=False).splitlines() if x.startswith("loosened since the base"))
    assert "(bundle.yaml line 98)" in said and f"(loosened, line {tolerance.line})" in said
