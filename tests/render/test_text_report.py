"""The terminal report: readable figures, parameters, colour only when wanted."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from checker.cli import colour_wanted
from checker.findings import error
from checker.render.text import render
from checker.reports.model import BundleReport, Comparison, NotRun, Report, RuleResult


def report(rule: RuleResult) -> Report:
    bundle = BundleReport(name="m", version="1", path="m", comparisons=[Comparison("int8", "reference", [rule])])
    if not rule.passed:  # the bundle fails by its comparison.rule error, as a run's does
        bundle.add([error("comparison.rule", f"int8: rule {rule.output}/{rule.check} failed")])
    return Report("0", [bundle])


def test_a_failing_figure_never_reads_as_its_threshold() -> None:
    rule = RuleResult("logits", "cosine", {"min": 0.9999}, False, 0.5, 1.0, "dusk", 0.99989, 0.9999, 0.99989)
    text = render(report(rule))
    assert "0.99989" in text and "min=0.9999" in text and "dusk" in text
    assert "0 of 1 bundles pass" in text


def test_one_bundle_passing_reads_as_singular() -> None:
    data = report(RuleResult("y", "exact", {}, True, 1.0, 1.0, None, None, None, None))
    assert "1 of 1 bundle passes" in render(data)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("value", "colour"), [(None, True), ("", True), ("1", False)])
def test_no_color_set_and_not_empty_turns_colour_off(
    monkeypatch: pytest.MonkeyPatch, value: str | None, colour: bool
) -> None:
    if value is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", value)
    assert colour_wanted(argparse.Namespace(no_color=False), Tty()) is colour
    assert colour_wanted(argparse.Namespace(no_color=False), io.StringIO()) is False


def test_a_reused_verdict_is_shown_printable_on_its_one_line() -> None:
    """A reused verdict's figures come from a stored attestation (untrusted) and are shown only as one line:
    each control character on it is an escape, however deep in the figures it was."""
    from checker.findings import info
    from checker.reports.parts.reused import Reused

    hostile = "\x1b]0;owned\x07\x1b[2J"
    reused = Reused(
        entry="e", key="k", verified_at="2026-01-02T03:04:05Z\r\nPASS  forged", signed_by=f"the key {hostile}",
        result="PASSED", checker_version="0.1", comparisons=[{"graph": "int8", "against": "x", "status": "pass"}],
        platforms=[{"class": f"x86-64-v3{hostile}"}], findings={"warning": {f"id{hostile}": 1}},
    )  # fmt: skip
    bundle = BundleReport(name=f"m{hostile}", version=f"1{hostile}", path=f"zoo/m{hostile}", reused=reused)
    bundle.add([info("store.reused", reused.line())])
    bundle.not_run = [NotRun(f"platform{hostile}", f"because{hostile}")]
    text = render(Report("0", [bundle]))
    [line] = [x for x in text.splitlines() if "reused: verdict of" in x]
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "\\x1b]0;owned\\x07" in line and "x86-64-v3\\x1b" in line and "\\x0d\\x0aPASS  forged" in line
    assert line.startswith("PASS  m\\x1b]0;owned") and "[2J 1\\x1b]0;owned\\x07\\x1b[2J  (zoo/m\\x1b]0;owned" in line
    assert "1 check not run: platform\\x1b]0;owned\\x07\\x1b[2J: because\\x1b" in text.splitlines()[0]


def test_a_value_under_a_key_named_like_a_kept_field_is_still_made_printable() -> None:
    """The fields the text report leaves to be escaped where shown (a reused verdict, a command's output) are
    record fields: a rule's parameter of that name, from a report read back (untrusted), is escaped as any."""
    hostile = "\x1b]0;owned\x07\x1b[2J"
    for key in ("reused", "stdout_tail"):
        rule = RuleResult("y", "exact", {key: hostile}, True, 1.0, 1.0, None, None, None, None)
        text = render(report(rule))
        assert "\x1b" not in text and "\\x1b]0;owned" in text, key


def test_a_reused_bundle_loosened_since_the_base_is_named_printable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reused pass is not walked to be made printable: where its manifest is named on another line (a rule
    loosened since the base), that name is escaped there too."""
    import json

    from checker.cli import main
    from checker.reports.parts.reused import Reused

    hostile = "\x1b]0;owned\x07\x1b[2J"

    def written(threshold: float, reused: Reused | None, name: str) -> Path:
        rule = RuleResult("logits", "max_abs", {"max": threshold}, True, 1.0, 1.0, None, 0.001, threshold, None, line=7)
        bundle = BundleReport(
            name="m", version="1", path="zoo/m", manifest_file=f"bundle{hostile}.yaml",
            comparisons=[Comparison("int8", "reference", [rule])], reused=reused,
        )  # fmt: skip
        out = tmp_path / name
        out.write_text(json.dumps(Report("0.1", [bundle]).to_dict()))
        return out

    stored = Reused(
        entry="e", key="a" * 64, verified_at="2026-01-02T03:04:05Z", signed_by="k", result="PASSED",
        checker_version="0.1", comparisons=[], platforms=[], findings={},
    )  # fmt: skip
    base, head = written(0.01, None, "base.json"), written(0.5, stored, "head.json")
    capsys.readouterr()
    main(["report", "diff", str(base), str(head)])
    text = capsys.readouterr().out
    assert "loosened since the base" in text and "\x1b" not in text and "bundle\\x1b]0;owned" in text
