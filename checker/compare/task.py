"""Task rules: the application's answer (a case's `label`) against the graph's top-k, over a slice of cases.

`accuracy` is the share of labelled items whose label is among the graph's k highest entries, with Wilson's
interval. `accuracy_drop` is how much of that share the graph loses against the other side of its rule set
(the reference outputs under `rules`, the baseline's under `drift_rules`), paired item by item on the same
cases, with an exact interval on the discordant items. When the interval holds the threshold the cases cannot
support the verdict either way: a `comparison.too_few_cases` warning names the interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from checker import findings as F
from checker.compare.intervals import CONFIDENCE, Interval, mcnemar_p, paired_drop, wilson
from checker.compare.metrics import class_rows
from checker.compare.rules import CaseResult, Rule, Tally
from checker.findings import Finding
from checker.reports.model import RuleResult
from checker.reports.parts.judged import Interval as ReportedInterval
from checker.reports.parts.judged import TaskStatistics

if TYPE_CHECKING:
    from checker.context import Case

Arrays = Mapping[str, np.ndarray]


def label_indices(raw: Any, labels: Sequence[str] | None, count: int, classes: int) -> list[int] | str:
    """The class index of every item from a case's `label` (a name, an index, or a list of them), or why not."""
    if raw is None:
        return "the case has no label"
    values = raw if isinstance(raw, list) else [raw]
    if len(values) != count:
        return f"the case's label names {len(values)} item(s), its output holds {count}"
    out = []
    for value in values:
        if isinstance(value, bool):
            return f"label {value!r} is neither a class name nor an index"
        if isinstance(value, int):
            index = value
        elif labels is not None and value in labels:
            index = labels.index(value)
        else:
            return f"label {value!r} is not in the output's labels" if labels else f"label {value!r} needs labels"
        if not 0 <= index < classes:
            return f"label index {index} lies outside the output's {classes} classes"
        out.append(index)
    return out


def _hits(x: np.ndarray, rule: Rule, index: list[int]) -> np.ndarray:
    """Per item: whether the label is among the k highest entries (ties with the k-th count as in)."""
    rows = class_rows(x, int(rule.params["axis"]))
    chosen = rows[np.arange(len(index)), index]
    above: np.ndarray = (rows > chosen[:, None]).sum(axis=1)
    return above < int(rule.params["k"])


def _index_hits(x: np.ndarray, index: list[int]) -> np.ndarray:
    """Per item of an index-valued output (ArgMax in the graph): whether its class is the label's."""
    hits: np.ndarray = np.asarray(x).reshape(-1) == np.asarray(index)
    return hits


def _prepared(
    rule: Rule, case: Case, a: np.ndarray, labels: Sequence[str] | None, index_valued: bool
) -> tuple[list[int], np.ndarray] | str:
    """The label's class index of every item and whether the graph's answer is it, or why not."""
    if index_valued:
        if int(rule.params["k"]) != 1 or labels is None or not np.issubdtype(a.dtype, np.integer):
            return f"'{rule.output}' holds one integer class index per item: a task rule on it needs k 1 and labels"
        index = label_indices(case.label, labels, a.size, len(labels))
        return index if isinstance(index, str) else (index, _index_hits(a, index))
    axis = int(rule.params["axis"])
    if not -a.ndim <= axis < a.ndim or a.shape[axis] < int(rule.params["k"]):
        return f"axis {axis} of shape {list(a.shape)} cannot hold a top {rule.params['k']}"
    if labels is not None and a.shape[axis] != len(labels):
        return f"'{rule.output}' has {a.shape[axis]} classes, its labels {len(labels)}"
    index = label_indices(case.label, labels, class_rows(a, axis).shape[0], int(a.shape[axis]))
    return index if isinstance(index, str) else (index, _hits(a, rule, index))


def case_result(
    rule: Rule,
    case: Case,
    actual: Arrays,
    expected: Arrays | None,
    labels: Sequence[str] | None,
    index_valued: bool = False,
) -> CaseResult:
    """One case under a task rule: the share of its items the graph gets right (accuracy), or loses (drop)."""
    a = actual.get(rule.output)
    if a is None:
        return CaseResult(None, False, f"the graph gave no output '{rule.output}' for this case")
    prepared = _prepared(rule, case, a, labels, index_valued)
    if isinstance(prepared, str):
        return CaseResult(None, False, prepared)
    index, hit = prepared
    count = len(index)
    if not rule.check.name.endswith("_drop"):
        tally = Tally(count, int(hit.sum()))
        return CaseResult(tally.hits / count, True, tally=tally, compared=count)
    e = None if expected is None else expected.get(rule.output)
    if e is None or e.shape != a.shape:
        return CaseResult(None, False, f"the other side has no '{rule.output}' of shape {list(a.shape)} here")
    other = _index_hits(e, index) if index_valued else _hits(e, rule, index)
    tally = Tally(count, int(hit.sum()), int(other.sum()), int((other & ~hit).sum()), int((hit & ~other).sum()))
    return CaseResult((tally.lost - tally.gained) / count, True, tally=tally, compared=count)


def _counts(tally: Tally) -> list[int]:
    return [tally.items, tally.hits, tally.other_hits, tally.lost, tally.gained]


def tally_of(counts: Sequence[int]) -> Tally:
    """A Tally back from the report's list of counts (reports.merge)."""
    return Tally(*(int(n) for n in counts))


def _total(names: Sequence[str], results: Mapping[str, CaseResult]) -> Tally:
    tallies = [t for n in names if (t := results[n].tally) is not None]
    return Tally(*(sum(getattr(t, f) for t in tallies) for f in ("items", "hits", "other_hits", "lost", "gained")))


def _figure(rule: Rule, total: Tally) -> tuple[float, Interval]:
    """The rule's figure over the slice and its interval."""
    n = total.items
    if not _paired(rule):
        return total.hits / n, wilson(total.hits, n)
    drop, interval = (total.lost - total.gained) / n, paired_drop(total.lost, total.gained, n)
    if rule.params.get("relative"):
        # Relative to the other side's accuracy, taken as measured: the interval scales with it.
        base = total.other_hits / n
        if base == 0:
            return 0.0, Interval(0.0, 0.0, interval.method)
        interval = Interval(interval.low / base, interval.high / base, interval.method + ", relative")
        drop /= base
    return drop, interval


def _paired(rule: Rule) -> bool:
    """A drop (accuracy_drop) is judged item by item against the other side, not against the labels alone."""
    return rule.check.name.endswith("_drop")


def _statistics(rule: Rule, total: Tally, interval: Interval) -> TaskStatistics:
    """The counts the report shows beside the figure, and its interval."""
    said = TaskStatistics(
        total.items, total.hits, ReportedInterval(interval.low, interval.high, interval.method, CONFIDENCE)
    )
    if _paired(rule):
        said.other_hits, said.lost, said.gained = total.other_hits, total.lost, total.gained
        said.mcnemar_p = mcnemar_p(total.lost, total.gained)
    return said


def judge_task(
    rule: Rule, names: Sequence[str], results: Mapping[str, CaseResult], line: int | None
) -> tuple[RuleResult, Interval | None]:
    """The task rule over the slice `names`: one figure for the whole set, and its interval."""
    unmeasured = [n for n in names if results[n].figure is None]
    result = RuleResult(
        output=rule.output,
        check=rule.check.name,
        params=dict(rule.params),
        passed=False,
        pass_rate=0.0,
        min_pass_rate=1.0,
        worst_case=unmeasured[0] if unmeasured else None,
        measured=None,
        threshold=rule.threshold,
        would_pass_at=None,
        direction=rule.check.direction,
        cases={n: results[n].figure for n in names},
        line=line,
        case_notes={n: note for n in names if (note := results[n].note)},
        tags=list(rule.tags),
    )
    if not names:
        result.note = "no case carries " + " or ".join(f"tag '{t}'" for t in rule.tags)
        return result, None
    if unmeasured:
        notes = "; ".join(f"case '{n}': {results[n].note}" for n in unmeasured[:3])
        result.note = f"{len(unmeasured)} case(s) could not be measured: {notes}"
        return result, None
    result.tallies = {n: _counts(t) for n in names if (t := results[n].tally) is not None}
    total = _total(names, results)
    figure, interval = _figure(rule, total)
    result.measured = result.would_pass_at = figure
    result.passed = rule.check.passes(figure, rule.params)
    result.pass_rate = 1.0 if result.passed else 0.0
    result.statistics = _statistics(rule, total, interval)
    return result, interval


def too_few_finding(graph: str, result: RuleResult, interval: Interval, where: dict[str, Any]) -> Finding | None:
    """comparison.too_few_cases when the interval holds the threshold: the set cannot decide the claim."""
    threshold = result.threshold
    if threshold is None or not interval.holds(threshold):
        return None
    items = result.statistics.items if result.statistics is not None else 0
    scope = f" on the cases tagged {', '.join(result.tags)}" if result.tags else ""
    return F.warning(
        F.COMPARISON_TOO_FEW_CASES,
        f"{graph}: '{result.output}' {result.check}{scope} measured {result.measured:.4g} on {items} item(s), "
        f"but its 95 % interval ({interval.method}) [{interval.low:.4g}, {interval.high:.4g}] holds the "
        f"threshold {threshold:g}: these cases cannot support the verdict either way",
        **where,
        graph=graph,
        output=result.output,
        check=result.check,
        items=items,
        interval=[interval.low, interval.high],
        method=interval.method,
    )
