"""The rules `checker variant add` proposes: what the application reads of each output judged against the
reference (`rules`), and the tensor itself against the baseline's (`drift_rules`), each threshold measured.

A class-score output (`logits`, `probabilities`, `scores`) gets the top class (`topk`, k 1) and the change of the
top class's score (`score_drift`, after softmax for logits) against the reference, and its cosine similarity to
the baseline's; another float output its cosine similarity on both sides; an integer or string output `exact`.

Each threshold leaves at least MARGIN of the worst case's distance from a perfect figure as headroom, then is
rounded outward to a value a reader states: 1, 2 or 5 times a power of ten for a drift, a number of nines for a
cosine similarity. A share of cases that fails outright (the top class changes on a case of one item) is not
hidden in a threshold: the rule keeps its strict threshold and states the share that holds (`min_pass_rate`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checker.manifest.model.answers import Answer
from checker.manifest.model.tensors import Output
from checker.release.measure import Figure

MARGIN = 0.2
CLASS_MEANINGS = ("logits", "probabilities", "scores")
FLOATS = ("float32", "float16", "bfloat16", "float64")
DRIFT_FLOOR = 0.001  # a score drift below this is measured noise, not a property to hold a variant to
COSINE_FLOOR = 1e-6  # the smallest distance from 1 a cosine threshold is given
UNRELATED_COSINE = 0.5  # below it the outputs do not resemble each other: no threshold says anything
RATE_STEP = 0.05
_LOOSE: dict[str, dict[str, Any]] = {
    "topk": {"min_agreement": 0.0},
    "score_drift": {"max": 1e300},
    "cosine": {"min": -1.0},
    "classes": {"min_agreement": 0.0},
    "embedding": {"min_cosine": -1.0},
    "detections": {"min_recall": 0.0, "min_precision": 0.0},
}
# The answers whose drift from the baseline's a variant is proposed a rule on, and its figure's sense.
ANSWER_CHECKS = ("classes", "embedding", "detections")
DETECTIONS_IOU = 0.5


@dataclass(frozen=True)
class Planned:
    """A rule to propose, before its threshold is measured."""

    group: str  # "rules" (against the reference) or "drift_rules" (against the baseline)
    rule: dict[str, Any]  # output, check and parameters, without the threshold

    def measuring(self) -> dict[str, Any]:
        """The rule with a threshold every case meets: the run measures every case and fails none."""
        rule = {**self.rule, **_LOOSE.get(self.rule["check"], {})}
        rule["min_pass_rate"] = 0.0
        return rule


@dataclass(frozen=True)
class Proposed:
    group: str
    rule: dict[str, Any] | None  # None: no rule can be proposed; `note` says why
    note: str


def plan(
    outputs: Sequence[Output],
    expected: set[str],
    graph_outputs: set[str],
    answers: Sequence[Answer] = (),
) -> list[Planned]:
    """The rules for each declared output the variant's graph has; those against the reference only for
    outputs every case gives an expected value of. Each answer the graph's outputs make (of a kind with a
    measured figure) gets a drift rule too: what the application shows, against what the baseline makes it show."""
    planned: list[Planned] = []
    for entry in outputs:
        name = entry.name
        if name not in graph_outputs:
            continue
        labels = entry.labels
        dtype, meaning = entry.dtype or "float32", entry.meaning
        given_axis = labels.axis if labels is not None else None
        axis = {"axis": given_axis} if given_axis is not None and given_axis != -1 else {}
        head = {"output": name}
        if dtype not in FLOATS or (labels is not None and labels.values == "index"):
            if name in expected:
                planned.append(Planned("rules", {**head, "check": "exact"}))
            continue
        if meaning in CLASS_MEANINGS and name in expected:
            apply = "softmax" if meaning == "logits" else "none"
            planned.append(Planned("rules", {**head, "check": "topk", "k": 1, **axis}))
            planned.append(Planned("rules", {**head, "check": "score_drift", **axis, "apply": apply}))
        elif name in expected:
            planned.append(Planned("rules", {**head, "check": "cosine"}))
        planned.append(Planned("drift_rules", {**head, "check": "cosine"}))
    for answer in answers:
        sources = [answer.from_] if isinstance(answer.from_, str) else list(answer.from_)
        if answer.kind in ANSWER_CHECKS and all(s in graph_outputs for s in sources):
            extra = {"iou": DETECTIONS_IOU} if answer.kind == "detections" else {}
            planned.append(Planned("drift_rules", {"answer": answer.name, "check": answer.kind, **extra}))
    return planned


def propose(planned: Planned, figures: Sequence[Figure]) -> Proposed:
    """The rule with its threshold set from the figures (every case, on every place measured)."""
    check = planned.rule["check"]
    if not figures:
        return Proposed(planned.group, None, f"{_subject(planned.rule)} gave no figure on any case to propose from")
    if check in ANSWER_CHECKS:
        return _answer(planned, figures)
    if check == "topk":
        return _topk(planned, figures)
    if check == "exact":
        return _exact(planned, figures)
    if check == "cosine":
        return _cosine(planned, figures)
    return _drift(planned, figures)


def _subject(rule: Mapping[str, Any]) -> str:
    return f"answer '{rule['answer']}'" if "answer" in rule else f"'{rule['output']}'"


def _answer(planned: Planned, figures: Sequence[Figure]) -> Proposed:
    """A share or a cosine, 1 when the answer is the baseline's: held at the worst case's distance from 1 with
    headroom, or not proposed when it falls below half (the answers no longer resemble each other)."""
    worst = min(figures, key=lambda f: f.value)
    check = planned.rule["check"]
    keys = {"classes": ("min_agreement",), "embedding": ("min_cosine",), "detections": ("min_recall", "min_precision")}
    if worst.value >= 1.0:
        bound = 1.0
    elif check == "embedding":
        bound = _decimal(1.0 - max(decade_up((1.0 - worst.value) * (1 + MARGIN)), COSINE_FLOOR))
    else:
        bound = _decimal(1.0 - nice_up((1.0 - worst.value) * (1 + MARGIN)))
    if bound < UNRELATED_COSINE:
        note = f"answer '{planned.rule['answer']}' differs from the baseline's on {worst.case} ({worst.value:.3g})"
        return Proposed(planned.group, None, note + ": no rule holds")
    if bound == 1.0 and check == "detections":
        return Proposed(planned.group, dict(planned.rule), _from_worst(worst))  # recall and precision 1: the defaults
    return Proposed(planned.group, {**planned.rule, **dict.fromkeys(keys[check], bound)}, _from_worst(worst, 8))


def _drift(planned: Planned, figures: Sequence[Figure]) -> Proposed:
    worst = max(figures, key=lambda f: f.value)
    threshold = max(nice_up(worst.value * (1 + MARGIN)), DRIFT_FLOOR) if worst.value > 0 else DRIFT_FLOOR
    if planned.rule.get("apply") in ("softmax", "sigmoid"):
        threshold = min(threshold, 1.0)  # a score between 0 and 1 changes by at most 1
    rule = {**planned.rule, "max": threshold}
    rule = {k: rule[k] for k in ("output", "check", "max", *planned.rule) if k in rule}  # the threshold first
    return Proposed(planned.group, rule, _from_worst(worst))


def _cosine(planned: Planned, figures: Sequence[Figure]) -> Proposed:
    worst = min(figures, key=lambda f: f.value)
    if worst.value < UNRELATED_COSINE:
        return Proposed(planned.group, None, _unrelated(planned, worst))
    distance = 1.0 - worst.value
    allowed = max(decade_up(distance * (1 + MARGIN)), COSINE_FLOOR) if distance > 0 else COSINE_FLOOR
    # Eight digits: a cosine just short of 1 must not read as 1.
    return Proposed(planned.group, {**planned.rule, "min": _decimal(1.0 - allowed)}, _from_worst(worst, 8))


def _topk(planned: Planned, figures: Sequence[Figure]) -> Proposed:
    """Every item of a case agreeing, on every case; else on the cases that do, the others named (at most half of
    them); else a measured share of each case's items."""
    top = f"the top {planned.rule.get('k', 1)}"
    cases = sorted({f.case for f in figures})
    differing = sorted({f.case for f in figures if f.value < 1.0})
    if not differing:
        note = f"{top} agrees on every item of every case ({len(cases)} cases; {_on_places(figures)})"
        return Proposed(planned.group, {**planned.rule, "min_agreement": 1.0}, note)
    if len(differing) * 2 <= len(cases):
        rule = {**planned.rule, "min_agreement": 1.0}
        return _with_rate(planned, rule, figures, differing, f"{top} differs from the reference's on an item")
    worst = min(figures, key=lambda f: f.value)
    least = _decimal(1.0 - nice_up((1.0 - worst.value) * (1 + MARGIN)))
    if least < 0.5:
        note = f"'{planned.rule['output']}': {top} differs from the reference's on most items of {worst.case}"
        return Proposed(planned.group, None, note + ": no rule holds")
    return Proposed(planned.group, {**planned.rule, "min_agreement": least}, _from_worst(worst))


def _exact(planned: Planned, figures: Sequence[Figure]) -> Proposed:
    below = sorted({f.case for f in figures if f.value > 0})
    rule = {**planned.rule}
    if not below:
        return Proposed(planned.group, rule, f"equal on every case ({_on_places(figures)})")
    return _with_rate(planned, rule, figures, below, "its values differ from the reference's")


def _with_rate(
    planned: Planned, rule: dict[str, Any], figures: Sequence[Figure], below: list[str], what: str
) -> Proposed:
    cases = sorted({f.case for f in figures})
    holding = len(cases) - len(below)
    rate = math.floor(holding / len(cases) / RATE_STEP) * RATE_STEP
    shown = ", ".join(below[:5]) + (f" and {len(below) - 5} more" if len(below) > 5 else "")
    if rate <= 0:
        return Proposed(planned.group, None, f"'{rule['output']}': on {shown} {what}: no case holds")
    return Proposed(
        planned.group,
        {**rule, "min_pass_rate": _decimal(rate)},
        f"on {shown} {what} ({holding} of {len(cases)} cases hold): check the variant there",
    )


def _from_worst(worst: Figure, digits: int = 5) -> str:
    return (
        f"proposed from the worst case, {worst.case}: {worst.value:.{digits}g} on {worst.where}, "
        f"with at least {MARGIN:.0%} headroom"
    )


def _on_places(figures: Sequence[Figure]) -> str:
    return ", ".join(dict.fromkeys(f.where for f in figures))


def _unrelated(planned: Planned, worst: Figure) -> str:
    return (
        f"'{planned.rule['output']}' has a cosine similarity of {worst.value:.3g} on case {worst.case} "
        f"({worst.where}): the outputs do not resemble each other, so no threshold is proposed"
    )


def _changed_everywhere(planned: Planned) -> str:
    return f"'{planned.rule['output']}': the top class differs from the reference's on every case: no rule holds"


def nice_up(x: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that is at least x (x > 0)."""
    exponent = math.floor(math.log10(x))
    for mantissa in (1, 2, 5, 10):
        value = float(f"{mantissa}e{exponent}")
        if value >= x * (1 - 1e-12):
            return value
    return float(f"1e{exponent + 1}")


def decade_up(x: float) -> float:
    """The smallest power of ten that is at least x (x > 0)."""
    exponent = math.ceil(math.log10(x) - 1e-12)
    return float(f"1e{exponent}")


def _decimal(x: float) -> float:
    """x as the decimal a reader writes: 1 - 0.01 is 0.99, not 0.9899999999999999."""
    return float(f"{x:.12g}")
