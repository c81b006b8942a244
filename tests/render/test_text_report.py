"""The terminal report: readable figures, parameters, colour only when wanted."""

from __future__ import annotations

import argparse
import io

import pytest

from checker.cli import colour_wanted
from checker.render.text import render


def report(rule: dict[str, object]) -> dict[str, object]:
    comparison = {"graph": "int8", "against": "reference", "status": "fail", "rules": [rule]}
    bundle = {
        "name": "m",
        "version": "1",
        "path": "m",
        "status": "fail",
        "pieces": {},
        "findings": [],
        "comparisons": [comparison],
    }
    return {"status": "fail", "checker_version": "0", "bundles": [bundle]}


def test_a_failing_figure_never_reads_as_its_threshold() -> None:
    rule = {
        "output": "logits",
        "check": "cosine",
        "params": {"min": 0.9999},
        "passed": False,
        "measured": 0.99989,
        "threshold": 0.9999,
        "would_pass_at": 0.99989,
        "pass_rate": 0.5,
        "worst_case": "dusk",
    }
    text = render(report(rule))
    assert "0.99989" in text and "min=0.9999" in text and "dusk" in text
    assert "0 of 1 bundles pass" in text


def test_one_bundle_passing_reads_as_singular() -> None:
    data = report({"output": "y", "check": "exact", "params": {}, "passed": True})
    data["bundles"][0]["status"] = "pass"  # type: ignore[index]
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
