"""`kind: values`: the numbers the steps leave (a wake-word score after `x / 10 + 2`, a regression); judged by the
largest absolute difference and that difference relative to the other side's largest magnitude."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from checker.answers.errors import AnswerError
from checker.answers.items import Item
from checker.answers.kind import CaseMeasure, Edit, Env, bounded_numbers, no_overall
from checker.manifest.model.answers import ValuesAnswer, ValuesRule
from checker.reports.parts.values import JsonValue

MAX_NUMBERS = 1 << 26
SAME = 1e-5  # answer fidelity: within this times max(1, the stored values' largest magnitude)


def decode(answer: ValuesAnswer, tensors: Sequence[np.ndarray], env: Env, tweak: Any = None) -> list[Item]:
    x = np.asarray(tensors[0], np.float64)
    return [x] if x.ndim < 2 else [np.asarray(v) for v in x]


def _differences(mine: list[Item], other: list[Item]) -> tuple[float, float]:
    top = mag = 0.0
    for m, o in zip(mine, other):
        a, b = np.asarray(m, np.float64), np.asarray(o, np.float64)
        if a.shape != b.shape:
            return float("inf"), float("inf")
        if a.size:
            top = max(top, float(np.abs(a - b).max()))
            mag = max(mag, float(np.abs(b).max()))
    return top, (top / mag if mag > 0 else (0.0 if top == 0 else float("inf")))


def measure(rule: ValuesRule, answer: ValuesAnswer, mine: list[Item], other: list[Item]) -> CaseMeasure:
    top, rel = _differences(mine, other)
    failed = []
    if rule.max_abs is not None and not top <= rule.max_abs:
        failed.append(f"differs by up to {top:.4g} (max_abs {rule.max_abs:g})")
    if rule.max_rel is not None and not rel <= rule.max_rel:
        failed.append(f"differs by {rel:.4g} of the other side's magnitude (max_rel {rule.max_rel:g})")
    figure = top if rule.max_abs is not None else rel
    if not np.isfinite(figure):
        return CaseMeasure(0.0, False, note="the values' shapes differ", items=len(mine))
    return CaseMeasure(figure, not failed, {"max_abs": top, "max_rel": rel}, "; ".join(failed) or None, items=len(mine))


def parse(value: Any, source: str) -> list[Item]:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiub" or value.size > MAX_NUMBERS:
        raise AnswerError(f"{source}: a values answer is a .npy of at most {MAX_NUMBERS} numbers")
    if not np.isfinite(value.astype(np.float64)).all():
        raise AnswerError(f"{source}: the stored values must be finite")
    x = value.astype(np.float64)
    return [x] if x.ndim < 2 else [np.asarray(v) for v in x]


def gap(decoded: list[Item], stored: list[Item]) -> str | None:
    if len(decoded) != len(stored):
        return f"the declared steps give {len(decoded)} item(s), the stored answer {len(stored)}"
    for d, s in zip(decoded, stored):
        a, b = np.asarray(d), np.asarray(s)
        if a.shape != b.shape:
            return f"the declared steps give shape {list(a.shape)}, the stored answer {list(b.shape)}"
        top = float(np.abs(a - b).max()) if a.size else 0.0
        if top > SAME * max(1.0, float(np.abs(b).max(initial=0.0))):
            return f"the values differ by up to {top:.4g}"
    return None


def shown(items: list[Item]) -> list[JsonValue]:
    return [bounded_numbers(np.asarray(v)) for v in items]


def edits(answer: ValuesAnswer, env: Env) -> Iterator[Edit]:
    return iter(())


class ValuesKind:
    name = "values"
    rule = ValuesRule
    direction = "max"
    keeps_items = False
    wording = "differs by up to {v:.4g} (max {t:g})"
    decode = staticmethod(decode)
    overall = staticmethod(no_overall)
    parse = staticmethod(parse)
    measure = staticmethod(measure)
    gap = staticmethod(gap)
    shown = staticmethod(shown)
    edits = staticmethod(edits)

    @staticmethod
    def threshold(rule: ValuesRule) -> float:
        return rule.max_abs if rule.max_abs is not None else float(rule.max_rel or 0.0)


KIND = ValuesKind()
