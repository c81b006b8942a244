"""`kind: decision`: a label on each side of the application's threshold ("wake" or "no wake"), and the score's
distance to it; judged by the items that flip over the whole slice."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from checker.answers.errors import AnswerError
from checker.answers.items import Decision, Item
from checker.answers.kind import MAX_CHANGES, CaseMeasure, Edit, Env, Overall
from checker.manifest.model.answers import DecisionAnswer, DecisionRule
from checker.reports.parts.values import JsonValue

MAX_ITEMS = 100_000


def decode(answer: DecisionAnswer, tensors: Sequence[np.ndarray], env: Env, tweak: Any = None) -> list[Item]:
    d = answer.decode
    x = np.asarray(tensors[0], np.float64)
    # A scalar is one item's score, a vector a batch of them, and a [batch, 1] output one score per item.
    scores = x.reshape(1, 1) if x.ndim == 0 else x.reshape(-1, 1) if x.ndim == 1 else x.reshape(x.shape[0], -1)
    if scores.shape[1] != 1:
        raise AnswerError(
            f"answer '{answer.name}': a decision needs one score per item after the steps, not {list(x.shape)} "
            "(select the score with `select: {axis: -1, index: N}`)"
        )
    out: list[Item] = []
    for score in scores[:, 0]:
        s = float(score)
        label = d.above if (math.isfinite(s) and s >= d.threshold) or s == math.inf else d.below
        out.append(Decision(label, s, abs(s - d.threshold) if math.isfinite(s) else math.inf))
    return out


def measure(rule: DecisionRule, answer: DecisionAnswer, mine: list[Item], other: list[Item]) -> CaseMeasure:
    flips = [
        (m, o)
        for m, o in zip(mine, other)
        if isinstance(m, Decision) and isinstance(o, Decision) and m.label != o.label
    ]
    changes = [f"decision '{o.label}' → '{m.label}' ({o.score:.3g} → {m.score:.3g})" for m, o in flips[:MAX_CHANGES]]
    return CaseMeasure(float(len(flips)), not flips, {"flips": float(len(flips))}, None, changes, items=len(mine))


def overall(rule: DecisionRule, cases: Sequence[tuple[str, list[Item], list[Item], Any]]) -> Overall | None:
    total = sum(c[3].figure for c in cases)
    worst = max(cases, key=lambda c: c[3].figure)[0] if cases else None
    ok = total <= rule.max_flips
    flipped = [c[0] for c in cases if c[3].figure]
    note = (
        None
        if not flipped
        else f"{total:.0f} item(s) flip in {len(flipped)} case(s): " + ", ".join(f"'{n}'" for n in flipped[:5])
    )
    return Overall(float(total), ok, worst, note)


def parse(value: Any, source: str) -> list[Item]:
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_ITEMS or not all(isinstance(v, str) and 0 < len(v) <= 1024 for v in items):
        raise AnswerError(f"{source}: a decision answer is a label or an array of at most {MAX_ITEMS} labels")
    return [Decision(v, math.nan, math.nan) for v in items]


def gap(decoded: list[Item], stored: list[Item]) -> str | None:
    if len(decoded) != len(stored):
        return f"the declared steps give {len(decoded)} decision(s), the stored answer {len(stored)}"
    for k, (d, s) in enumerate(zip(decoded, stored)):
        assert isinstance(d, Decision) and isinstance(s, Decision)
        if d.label != s.label:
            where = f"item {k}: " if len(decoded) > 1 else ""
            return f"{where}the declared steps decide '{d.label}' (score {d.score:.4g}), the application '{s.label}'"
    return None


def shown(items: list[Item]) -> list[JsonValue]:
    return [
        {"label": i.label, "score": round(i.score, 6) if math.isfinite(i.score) else None}
        for i in items
        if isinstance(i, Decision)
    ]


def edits(answer: DecisionAnswer, env: Env) -> Iterator[Edit]:
    d = answer.decode
    swapped = dataclasses.replace(d, above=d.below, below=d.above)
    yield Edit(
        dataclasses.replace(answer, decode=swapped),
        f"above and below swapped ('{d.below}' at or above {d.threshold:g})",
    )
    for t in [round(0.05 * i, 2) for i in range(1, 20)]:
        if not math.isclose(t, d.threshold):
            yield Edit(
                dataclasses.replace(answer, decode=dataclasses.replace(d, threshold=t)),
                f"threshold {t:g} for {d.threshold:g}",
            )


class DecisionKind:
    name = "decision"
    rule = DecisionRule
    direction = "max"
    keeps_items = False
    wording = "flips {v:.0f} decision(s) (max {t:g})"
    decode = staticmethod(decode)
    overall = staticmethod(overall)
    parse = staticmethod(parse)
    measure = staticmethod(measure)
    gap = staticmethod(gap)
    shown = staticmethod(shown)
    edits = staticmethod(edits)

    @staticmethod
    def threshold(rule: DecisionRule) -> float:
        return float(rule.max_flips)


KIND = DecisionKind()
