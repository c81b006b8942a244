"""Running one fuzz input through `checker verify` in this process, with the bounds the CLI applies.

The command line itself runs (cli.main), so every bound it sets holds here too; a run passes when it exits
0 or 1 (never 3: an exception reaching the internal-error handler is a bug) and its JSON report validates
against schemas/report.schema.json.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators import FuzzInput
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

CASE_TIMEOUT_S = "20"  # the CLI's --case-timeout for fuzz runs; the example's graph runs a case in milliseconds


def fuzz_seconds(default: float = 1.0) -> float:
    """Seconds per input family: CHECKER_FUZZ_SECONDS, short by default so the test run stays fast."""
    return float(os.environ.get("CHECKER_FUZZ_SECONDS", default))


@dataclass
class Outcome:
    code: int
    report: dict[str, Any] | None
    stdout: str
    stderr: str


def run_verify(target: Path, report_path: Path) -> Outcome:
    from checker.cli import main

    args = ["verify", str(target), "--format", "json", "--output", str(report_path)]
    args += ["--no-progress", "--case-timeout", CASE_TIMEOUT_S]
    out, err = io.StringIO(), io.StringIO()
    # NumPy's overflow warnings print on the command line; under pytest they would be raised as errors.
    with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("ignore")
        code = main(args)
    report = json.loads(report_path.read_text(encoding="utf-8")) if report_path.is_file() else None
    return Outcome(code, report, out.getvalue(), err.getvalue())


def report_problems(report: dict[str, Any] | None) -> list[str]:
    from checker.manifest.schema import validator

    if report is None:
        return ["no report was written"]
    return [
        f"{'/'.join(str(p) for p in e.absolute_path)}: {str(e.message)[:300]}"
        for e in validator("report").iter_errors(report)
    ]


def check_input(item: FuzzInput) -> Outcome:
    """Write and verify one input; AssertionError (with the input) when it crashes or breaks the schema."""
    with tempfile.TemporaryDirectory(prefix="checker-fuzz-") as tmp:
        folder = Path(tmp)
        target = item.write(folder)
        outcome = run_verify(target, folder / "report.json")
    internal = [
        f for b in (outcome.report or {}).get("bundles", []) for f in b["findings"] if f["id"] == "internal.error"
    ]
    assert outcome.code in (0, 1) and not internal, (
        f"exit {outcome.code} on {item!r}\n{outcome.stderr[-6000:]}\n{json.dumps(internal)[:4000]}"
    )
    problems = report_problems(outcome.report)
    assert not problems, f"the report breaks its schema on {item!r}: {problems[:5]}"
    return outcome


def fuzz(strategy: st.SearchStrategy[FuzzInput], seconds: float, check: Callable[[FuzzInput], Any]) -> int:
    """Run Hypothesis batches of `strategy` through `check` until `seconds` pass (at least one batch).

    Hypothesis has no time budget of its own, so batches of a few examples run until the budget is spent;
    each batch draws fresh inputs, and a failing one is shrunk and printed as usual."""
    deadline = time.monotonic() + seconds
    runs = [0]

    @settings(
        max_examples=3,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def batch(item: FuzzInput) -> None:
        runs[0] += 1
        check(item)

    batch()
    while time.monotonic() < deadline:
        batch()
    return runs[0]
