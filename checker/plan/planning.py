"""A plan made: the bundles selected (`select.py`), their measured costs read from earlier reports, the legs
balanced (`matrix.py`), and the report of the verdicts reused, for the job that joins the legs' reports."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker import __version__
from checker.context import Options
from checker.plan.changes import Changes, changed_since
from checker.plan.matrix import Leg, balance, matrix
from checker.plan.select import REUSED, RUN, UNCHANGED, Planned, select
from checker.reports.model import Report

MAX_LEGS = 256  # GitHub runs at most 256 jobs of one matrix


@dataclass
class Plan:
    planned: list[Planned]
    legs: list[Leg]
    changes: Changes | None = None
    costs_read: int = 0  # bundles whose cost an earlier report measured
    notes: list[str] = field(default_factory=list)

    def matrix(self) -> dict[str, Any]:
        return matrix(self.legs)

    def count(self, state: str) -> int:
        return sum(1 for p in self.planned if p.state == state)

    def reused_report(self, options: Options, environment: dict[str, str]) -> Report:
        """The report of the reused bundles, to be merged with the legs' reports into one comment."""
        bundles = [p.report for p in self.planned if p.report is not None]
        return Report(__version__, bundles, options.strict, environment)

    def summary(self) -> list[str]:
        """The plan in words, a line per leg and per bundle."""
        run, reused, unchanged = self.count(RUN), self.count(REUSED), self.count(UNCHANGED)
        head = f"plan: {run} of {len(self.planned)} bundles to run in {len(self.legs)} legs; {reused} reused"
        head += f"; {unchanged} unchanged since {self.changes.ref}" if self.changes is not None else ""
        lines = [head, *self.notes]
        for number, leg in enumerate(self.legs, start=1):
            shard = f" (shard {leg.shard})" if leg.shard else ""
            lines.append(f"leg {number}: {leg.cost:.1f} s{shard}: {' '.join(leg.bundles)}")
        lines += [f"{p.state:<9} {p.path}: {p.why}" for p in self.planned]
        return lines


def make_plan(
    paths: Sequence[str],
    options: Options,
    shards: int,
    changed: str | None = None,
    cost_reports: Sequence[Path] = (),
) -> Plan:
    changes = changed_since(changed, Path.cwd()) if changed else None
    costs = read_costs(cost_reports)
    planned = select(list(paths), options, changes, costs)
    legs = balance(planned, min(shards, MAX_LEGS))
    plan = Plan(planned, legs, changes, sum(1 for p in planned if os.path.normpath(p.path) in costs))
    if changes is not None and not changes.complete:
        plan.notes.append("the change set was too large to read whole: every bundle counts as changed")
    return plan


def read_costs(reports: Sequence[Path]) -> dict[str, float]:
    """Bundle path -> seconds its verification took, from earlier JSON reports (the latest given wins); a
    reused bundle's cost is its stored run's."""
    from checker.reports.files import load_report  # the reports' schema: only when costs are read

    costs: dict[str, float] = {}
    for path in reports:
        for bundle in load_report(path, untrusted=True).bundles:
            if bundle.duration_s is not None and bundle.duration_s >= 0:
                costs[os.path.normpath(bundle.path)] = bundle.duration_s
    return costs
