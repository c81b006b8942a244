"""Which boundary broke a variant's rule: export (baseline vs reference) or transform (variant vs baseline)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from checker.compare.rules import judge_rule
from checker.compare.ruleset import Entry, RuleSet, case_result
from checker.reports.model import RuleResult

if TYPE_CHECKING:
    import numpy as np

    from checker.context import Case


@dataclass
class Boundaries:
    """For a failed variant rule, the same rule at each boundary: the sentence that says which one broke.

    `shadow` holds the variant's rules already evaluated against the baseline's outputs (the transform's own
    error); the export's error is the same rule on the baseline's outputs against the reference.
    """

    variant: str
    shadow: RuleSet
    cases: Sequence[Case]
    baseline_outputs: Mapping[str, Mapping[str, np.ndarray]]

    def __call__(self, entry: Entry, result: RuleResult) -> str | None:
        judged = self.judged(entry)
        return sentence(self.variant, *judged) if judged is not None else None

    def judged(self, entry: Entry) -> tuple[RuleResult, RuleResult] | None:
        """The rule at the export boundary and at the transform boundary, over the cases it judges."""
        rule = entry.rule
        twin = next((e for e in self.shadow.entries if e.keys == entry.keys), None)
        if rule is None or twin is None or rule.check.task:  # a task rule is judged against the labels
            return None
        # A sliced rule (`tags`) is split inside its slice: the cases it judges, not every case.
        cases = [c for c in self.cases if not rule.tags or set(c.tags) & set(rule.tags)]
        if not cases:
            return None
        names = [c.name for c in cases]
        transform = judge_rule(rule, names, twin.results, None)
        export_results = {
            c.name: case_result(rule, self.baseline_outputs.get(c.name), c.expected, "not run", "no expected output")
            for c in cases
        }
        export = judge_rule(rule, names, export_results, None)
        return export, transform


def sentence(variant: str, export: RuleResult, transform: RuleResult) -> str:
    return (
        f"by boundary, export (baseline vs reference) {verdict(export)} and transform "
        f"({variant} vs baseline) {verdict(transform)}: {which(export.passed, transform.passed)}"
    )


def verdict(result: RuleResult) -> str:
    if result.measured is None:
        return "could not be measured"
    return f"measures {result.measured:.4g} and {'passes' if result.passed else 'fails'}"


def which(export_ok: bool, transform_ok: bool) -> str:
    if export_ok and not transform_ok:
        return "the transform introduced the error"
    if transform_ok and not export_ok:
        return "the export's error alone already exceeds the rule"
    if not (export_ok or transform_ok):
        return "both boundaries exceed the rule"
    return "neither boundary alone exceeds the rule; their errors add up"
