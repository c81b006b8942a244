"""A rule judged over every case: per-case figures, the pass rate, the worst case and how far it missed."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker.compare.metrics import CHECKS, RANKING_BIG, Check, Pair
from checker.manifest.model.build import build
from checker.manifest.model.rules import MAX_TAG, MAX_TAGS, Param, RuleBase, param
from checker.reports.model import RuleResult

Keys = tuple[str | int, ...]
_MAX_NOTES = 3
NOTHING_COMPARED = "no case gave an element of '{output}' to compare (every expected one is empty or NaN)"


class RuleError(ValueError):
    """A rule stated wrongly (unknown check or parameter, wrong type): a manifest.schema error."""


@dataclass(frozen=True)
class Rule:
    output: str
    check: Check
    params: dict[str, Any]  # every parameter, defaults filled in
    min_pass_rate: float
    keys: Keys = ()  # where the manifest states it
    tags: tuple[str, ...] = ()  # the slice it judges: cases carrying any of these tags (none: every case)

    @property
    def threshold(self) -> float:
        return self.check.threshold(self.params)


@dataclass(frozen=True)
class CaseResult:
    """One case under one rule. `figure` is None when the case could not be measured at all."""

    figure: float | None
    passed: bool
    note: str | None = None
    nonfinite: int = 0  # NaN/infinity elements of the actual output where the expected one is finite
    compared: int = 0  # elements compared: those of the expected output, less matching NaN/infinity
    tally: Tally | None = None  # a task rule's counts on this case (compare.task)


@dataclass(frozen=True)
class Tally:
    """A task rule's counts on one case: labelled items, how many the graph and the other side get right, and
    the discordant ones (right on the other side only: lost; on the graph only: gained)."""

    items: int
    hits: int
    other_hits: int = 0
    lost: int = 0
    gained: int = 0


def rule_of(block: RuleBase) -> Rule:
    """The rule a manifest states, from its typed block (the schema has judged it): every parameter of its kind,
    defaults filled in, and those taken only when stated left out when they are not."""
    check = CHECKS[block.check]
    params = {name: value for name in check.params if (value := getattr(block, name)) is not None}
    tags = tuple(dict.fromkeys(block.tags)) if block.tags else ()
    return Rule(block.output, check, params, block.min_pass_rate, block.at, tags)


def parse_rule(raw: Any, keys: Keys = ()) -> Rule:
    """A rule from a mapping that has not been through the schema; RuleError says what is wrong with it. What a
    kind takes, and each parameter's type and bounds, are its block's (manifest.model.rules)."""
    if not isinstance(raw, Mapping):
        raise RuleError("a rule must be a mapping with 'output' and 'check'")
    output, name = raw.get("output"), raw.get("check")
    if not isinstance(output, str) or not output:
        raise RuleError("a rule needs 'output', the name of a graph output")
    check = CHECKS.get(name) if isinstance(name, str) else None
    if check is None:
        raise RuleError(f"unknown check {name!r}; known: {', '.join(CHECKS)}")
    taken = {"output", "check", "tags", *check.params}
    if not check.task:  # a task rule is judged on the whole set, not case by case
        taken.add("min_pass_rate")
    unknown = sorted(set(raw) - taken, key=str)
    if unknown:
        raise RuleError(f"check '{check.name}' takes no parameter {', '.join(repr(k) for k in unknown)}")
    missing = [k for k in check.required if k not in raw]
    if missing:
        raise RuleError(f"check '{check.name}' needs {', '.join(repr(k) for k in missing)}")
    for key in raw:
        if key in check.params or key == "min_pass_rate":
            _value(raw[key], param(check.model, key))
    if "tags" in raw:
        _tags(raw["tags"])
    return rule_of(build(check.model, raw, keys))


def _value(value: Any, p: Param) -> None:
    """A parameter's value against its type and bounds."""
    if p.type is bool:
        if not isinstance(value, bool):
            raise RuleError(f"'{p.name}' must be true or false, not {_short(value)}")
    elif p.choices is not None:
        if value not in p.choices:
            raise RuleError(f"'{p.name}' must be one of {', '.join(map(str, p.choices))}, not {_short(value)}")
    elif p.type is int:
        _integer(value, p)
    else:
        _number(value, p)


def _number(value: Any, p: Param) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
        raise RuleError(f"'{p.name}' must be a finite number, not {_short(value)}")
    if not _within(value, p):
        raise RuleError(f"'{p.name}' must lie in [{p.minimum}, {p.maximum}], not {value!r}")


def _integer(value: Any, p: Param) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuleError(f"'{p.name}' must be an integer, not {_short(value)}")
    if p.minimum is not None and value < p.minimum:
        raise RuleError(f"'{p.name}' must be an integer >= {p.minimum}, not {value!r}")
    if p.maximum is not None and value > p.maximum:
        raise RuleError(f"'{p.name}' must be an integer <= {p.maximum}, not {value!r}")


def _within(value: float, p: Param) -> bool:
    return (p.minimum is None or value >= p.minimum) and (p.maximum is None or value <= p.maximum)


def _finite(value: float) -> bool:
    """Whether a number fits a float and is finite: an integer like 10**400 does not (math.isfinite raises)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:20] + "..." + text[-8:]


def _tags(value: Any) -> None:
    named = isinstance(value, list) and all(isinstance(t, str) and 0 < len(t) <= MAX_TAG for t in value)
    if not named or not 0 < len(value) <= MAX_TAGS:
        raise RuleError(f"'tags' must be a non-empty list of tag names, not {_short(value)}")


def _shape_problem(rule: Rule, a: np.ndarray, e: np.ndarray) -> str | None:
    if a.shape != e.shape:
        return f"shape {list(a.shape)} differs from the expected {list(e.shape)}"
    if rule.check.numeric and not (a.dtype.kind in "biuf" and e.dtype.kind in "biuf"):
        return f"{a.dtype} and {e.dtype} cannot be compared by '{rule.check.name}'"
    if "batch_axis" in rule.params:
        problem = _batch_axis_problem(rule.params, a.shape)
        if problem:
            return problem
    if "axis" in rule.params:
        axis = rule.params["axis"]
        if not -a.ndim <= axis < a.ndim:
            return f"axis {axis} does not exist in shape {list(a.shape)}"
        size = a.shape[axis]
        if "k" in rule.params and rule.params["k"] > size:
            return f"k={rule.params['k']} exceeds the {size} entries of axis {axis}"
        if size == 0:
            return f"axis {axis} has no entries to rank"
    return None


def _batch_axis_problem(params: dict[str, Any], shape: tuple[int, ...]) -> str | None:
    batch = params["batch_axis"]
    if not -len(shape) <= batch < len(shape):
        return f"batch_axis {batch} does not exist in shape {list(shape)}"
    axis = params.get("axis")
    if axis is not None and -len(shape) <= axis < len(shape) and axis % len(shape) == batch % len(shape):
        return f"batch_axis {batch} is the class axis {axis}: items and classes must lie on different axes"
    return None


def _all_finite(x: np.ndarray) -> bool:
    """Without a full-size temporary: NaN propagates through min and max, and infinity is one of them."""
    if x.dtype.kind != "f" or x.size == 0:
        return True
    return math.isfinite(float(x.min())) and math.isfinite(float(x.max()))


def _nonfinite(a: np.ndarray, e: np.ndarray) -> tuple[np.ndarray | None, CaseResult | None]:
    """Where both hold the same NaN/infinity (None when neither has any), or the failing result."""
    if _all_finite(a) and _all_finite(e):
        return None, None
    bad_a, bad_e = ~np.isfinite(a), ~np.isfinite(e)
    if not (bad_a.any() or bad_e.any()):
        return None, None
    new = int(np.count_nonzero(bad_a & ~bad_e))
    if new:
        note = f"holds NaN or infinity at {new} element(s) where the expected output is finite"
        return None, CaseResult(None, False, note, nonfinite=new)
    same = bad_e & ((np.isnan(a) & np.isnan(e)) | (a == e))
    lost = int(np.count_nonzero(bad_e & ~same))
    if lost:
        return None, CaseResult(None, False, f"does not reproduce the expected NaN/infinity at {lost} element(s)")
    return bad_e, None


def _neutralise(x: np.ndarray, mask: np.ndarray, ranking: bool) -> np.ndarray:
    """Matching NaN/infinity: dropped from element-wise checks, kept in order (finite) for ranking ones."""
    out = x.astype(np.float64)
    if ranking:
        out[mask] = np.where(np.isposinf(out[mask]), RANKING_BIG, -RANKING_BIG)
    else:
        out[mask] = 0.0
    return out


def evaluate_case(
    rule: Rule, actual: np.ndarray | None, expected: np.ndarray | None, cache: dict[str, Pair] | None = None
) -> CaseResult:
    """One case under one rule. `cache` shares the float64 views between the rules on one output."""
    if actual is None:
        return CaseResult(None, False, f"the graph gave no output '{rule.output}' for this case")
    if expected is None:
        return CaseResult(None, False, f"the case has no expected '{rule.output}'")
    problem = _shape_problem(rule, actual, expected)
    if problem:
        return CaseResult(None, False, problem)
    mask, failed = _nonfinite(actual, expected)
    if failed is not None:
        return failed
    if mask is not None:
        pair = Pair(*(_neutralise(x, mask, rule.check.ranking) for x in (actual, expected)))
    elif cache is not None:
        pair = cache.setdefault(rule.output, Pair(actual, expected))
    else:
        pair = Pair(actual, expected)
    compared = int(expected.size) - (int(np.count_nonzero(mask)) if mask is not None else 0)
    return _measure(rule, pair, compared)


def _measure(rule: Rule, pair: Pair, compared: int) -> CaseResult:
    with np.errstate(all="ignore"):
        figure = rule.check.figure(pair, rule.params)
    if not math.isfinite(figure):
        return CaseResult(None, False, "the difference is too large to measure (it overflows)")
    return CaseResult(figure, rule.check.passes(figure, rule.params), compared=compared)


def _badness(rule: Rule, figure: float | None) -> float:
    """Larger is worse, whichever way the check points; an unmeasured case is worst of all."""
    if figure is None:
        return math.inf
    return figure if rule.check.direction == "max" else -figure


def would_pass_at(rule: Rule, figures: Sequence[float | None]) -> float | None:
    """The threshold that would just pass: the figure of the case that min_pass_rate makes decisive."""
    if not figures:
        return None
    needed = max(1, math.ceil(rule.min_pass_rate * len(figures) - 1e-9))
    ordered = sorted(_badness(rule, f) for f in figures)
    decisive = ordered[needed - 1]
    if math.isinf(decisive):
        return None
    return decisive if rule.check.direction == "max" else -decisive


def _notes(names: Sequence[str], results: Mapping[str, CaseResult]) -> str | None:
    notes = [f"case '{n}': {results[n].note}" for n in names if results[n].note]
    if not notes:
        return None
    more = f"; and {len(notes) - _MAX_NOTES} more" if len(notes) > _MAX_NOTES else ""
    return "; ".join(notes[:_MAX_NOTES]) + more


def judge_rule(rule: Rule, names: Sequence[str], results: Mapping[str, CaseResult], line: int | None) -> RuleResult:
    """The rule over every case, in case order."""
    figures = [results[n].figure for n in names]
    passing = sum(1 for n in names if results[n].passed)
    rate = passing / len(names) if names else 0.0
    # Empty or all-NaN outputs agree vacuously; a rule that compared nothing in any case has shown nothing.
    vacuous = passing > 0 and not any(results[n].compared for n in names)
    worst = max(names, key=lambda n: _badness(rule, results[n].figure), default=None)
    return RuleResult(
        output=rule.output,
        check=rule.check.name,
        params=dict(rule.params),
        passed=bool(names) and rate >= rule.min_pass_rate - 1e-12 and not vacuous,
        pass_rate=rate,
        min_pass_rate=rule.min_pass_rate,
        worst_case=worst,
        measured=results[worst].figure if worst is not None else None,
        threshold=rule.threshold,
        would_pass_at=would_pass_at(rule, figures),
        direction=rule.check.direction,
        cases={n: results[n].figure for n in names},
        note=NOTHING_COMPARED.format(output=rule.output) if vacuous else _notes(names, results),
        line=line,
        case_notes={n: note for n in names if (note := results[n].note)},
        compared=any(results[n].compared for n in names),
    )
