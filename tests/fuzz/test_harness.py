"""The fuzz harness itself: a crash fails the run with the input printed, and a sound input passes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from generators import FuzzInput, copy_base
from harness import check_input


def _crashing_stage(ctx: object) -> Iterator[object]:
    raise ZeroDivisionError("a bug")
    yield  # a stage is a generator


def test_an_internal_error_fails_with_the_input_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    from checker import verify

    _crashing_stage.__name__ = "graph_stage"
    monkeypatch.setattr(verify, "AFTER_SCHEMA", (_crashing_stage,))
    with pytest.raises(AssertionError) as caught:
        check_input(FuzzInput("example", "the trimmed example, unchanged", copy_base))
    assert "exit 3 on FuzzInput(example: the trimmed example, unchanged)" in str(caught.value)
    assert "ZeroDivisionError: a bug" in str(caught.value)


def test_the_trimmed_example_passes_with_a_valid_report() -> None:
    outcome = check_input(FuzzInput("example", "the trimmed example, unchanged", copy_base))
    assert outcome.code == 0 and outcome.report is not None and outcome.report["status"] == "pass"
