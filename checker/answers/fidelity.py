"""Answer fidelity: the declared steps run on a case's expected outputs must make the answer the application stored
for it; a difference is explained by every single edit of the declaration that makes the stored answer (box format,
normalised coordinates, geometry, class offset, a sigmoid or softmax missing or doubled, a threshold, pooling without
the mask, normalize missing, the CTC blank, special tokens), and said when none does."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker.answers.errors import AnswerError
from checker.answers.items import Decision, Item
from checker.answers.kind import Edit, Env
from checker.answers.make import kind_of, make
from checker.answers.tensors import step_changes, words
from checker.manifest import views
from checker.manifest.model.answers import Apply, Normalize, Pool

MAX_EDITS = 400  # declarations tried per answer
MAX_NAMED = 5  # edits a finding names


@dataclass(frozen=True)
class Stored:
    """One case's stored answer, and what the declared steps are run on for it."""

    case: str
    outputs: Mapping[str, np.ndarray]
    env: Env
    items: list[Item]


@dataclass(frozen=True)
class Gap:
    case: str
    difference: str


def gaps(answer: Any, stored: Sequence[Stored]) -> list[Gap]:
    """The cases whose stored answer the declared steps do not make (AnswerError when they make none)."""
    out = []
    kind = kind_of(answer)
    for s in stored:
        difference = kind.gap(make(answer, s.outputs, s.env), s.items)
        if difference is not None:
            out.append(Gap(s.case, difference))
    return out


def explain(answer: Any, failing: Sequence[Stored]) -> list[str]:
    """Every single edit that makes the stored answer of each failing case, in the order they are tried."""
    if not failing:
        return []
    kind = kind_of(answer)
    found: list[str] = []
    fitted = list(_fitted(answer, failing))
    for edit in [*fitted, *_bounded(candidates(answer, failing[0].env))]:
        if all(_reproduces(kind, edit, s) for s in failing):
            found.append(edit.words)
    return list(dict.fromkeys(found))


def _reproduces(kind: Any, edit: Edit, s: Stored) -> bool:
    try:
        return kind.gap(make(edit.answer, s.outputs, s.env, edit.tweak), s.items) is None
    except AnswerError:
        return False


def _bounded(edits: Iterator[Edit]) -> Iterator[Edit]:
    for i, edit in enumerate(edits):
        if i >= MAX_EDITS:
            return
        yield edit


def candidates(answer: Any, env: Env) -> Iterator[Edit]:
    """The decoder's edits first (box format, geometry, class offset, thresholds), then each step's, then a step
    the application runs and the declaration lacks."""
    yield from kind_of(answer).edits(answer, env)
    steps = views.answer_steps(answer)
    masks = [name for name in env.inputs if "mask" in name.lower()]
    for i, step in enumerate(steps):
        for change in step_changes(step):
            replaced = [step, step] if change.steps is None else list(change.steps)
            yield Edit(dataclasses.replace(answer, steps=steps[:i] + replaced + steps[i + 1 :]), change.words)
        if isinstance(step, Pool) and step.mask is None:
            for mask in masks:
                masked = dataclasses.replace(step, mask=mask)
                said = f"pooling {step.mode} over the mask '{mask}' (the declaration pools without it)"
                yield Edit(dataclasses.replace(answer, steps=[*steps[:i], masked, *steps[i + 1 :]]), said)
    yield from _missing_steps(answer, steps, env)


def _fitted(answer: Any, failing: Sequence[Stored]) -> Iterator[Edit]:
    """Edits read off the stored answers themselves: the decision threshold that puts every stored label on its
    side of it (the shortest number between the highest 'below' score and the lowest 'above' one)."""
    if answer.kind != "decision":
        return
    d = answer.decode
    above: list[float] = []
    below: list[float] = []
    for s in failing:
        try:
            made = make(answer, s.outputs, s.env)
        except AnswerError:
            return
        for mine, theirs in zip(made, s.items):
            if isinstance(mine, Decision) and isinstance(theirs, Decision):
                (above if theirs.label == d.above else below).append(mine.score)
    if not above and not below:
        return
    low, high = max(below, default=-math.inf), min(above, default=math.inf)
    if not low < high:
        return
    threshold = _shortest_between(low, high)
    if threshold is not None and threshold != d.threshold:
        changed = dataclasses.replace(answer, decode=dataclasses.replace(d, threshold=threshold))
        yield Edit(changed, f"threshold {threshold:g} for {d.threshold:g}")


def _shortest_between(low: float, high: float) -> float | None:
    """The number with the fewest decimals in (low, high]."""
    if math.isinf(low) and math.isinf(high):
        return None
    if math.isinf(low):
        return math.floor(high * 100) / 100
    if math.isinf(high):
        return math.ceil(low * 100 + 1e-9) / 100 if low * 100 != math.ceil(low * 100) else low + 0.01
    for digits in range(0, 9):
        step = 10.0**-digits
        candidate = math.floor(high / step) * step
        if low < candidate <= high:
            return round(candidate, digits)
    return high


def _missing_steps(answer: Any, steps: list[Any], env: Env) -> Iterator[Edit]:
    functions = {s.function for s in steps if isinstance(s, Apply)}
    if answer.kind in ("classes", "decision", "values"):
        for function, axis in (("sigmoid", -1), ("softmax", -1)):
            if function not in functions:
                added = [*steps, Apply(function=function, axis=axis)]  # type: ignore[arg-type]
                yield Edit(
                    dataclasses.replace(answer, steps=added),
                    f"{function} missing from the declaration (the application applies it)",
                )
    if answer.kind == "embedding":
        if not any(isinstance(s, Normalize) for s in steps):
            yield Edit(
                dataclasses.replace(answer, steps=[*steps, Normalize()]),
                "normalize missing from the declaration (the application normalises)",
            )
        if not any(isinstance(s, Pool) for s in steps):
            masks = [name for name in env.inputs if "mask" in name.lower()]
            for mode, mask in [("mean", m) for m in masks] + [("mean", None), ("first", None)]:
                pool = Pool(mode=mode, axis=1, mask=mask)  # type: ignore[arg-type]
                said = f"pooling {mode}{f' over the mask {mask}' if mask else ''} missing from the declaration"
                yield Edit(dataclasses.replace(answer, steps=[pool, *steps]), said)


def step_words(step: Any) -> str:
    return words(step)
