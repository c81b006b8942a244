"""`kind: classes`: the best classes of each item (top k, or every class above `min_score`); judged by the share of
items whose label lists agree."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from checker.answers.errors import AnswerError
from checker.answers.items import Item, Scored
from checker.answers.kind import (
    MAX_CHANGES,
    MAX_SHOWN_DETECTIONS,
    CaseMeasure,
    Edit,
    Env,
    label_of,
    no_overall,
    per_item,
)
from checker.manifest.model.answers import ClassesAnswer, ClassesDecode, ClassesRule
from checker.reports.parts.values import JsonValue

MAX_ITEMS = 100_000
SAME_SCORE = 0.01  # answer fidelity: stored scores agree to a rounding at two decimals
MULTI_LABEL_SCORE = 0.5  # multi_label without min_score: each class at 0.5 or more


def decode(answer: ClassesAnswer, tensors: Sequence[np.ndarray], env: Env, tweak: Any = None) -> list[Item]:
    d = answer.decode or ClassesDecode()
    labels = env.labels()
    out: list[Item] = []
    for row in per_item(tensors[0], 1, "a classes answer"):
        row = np.asarray(row, np.float64)
        if labels is not None and row.size != len(labels):
            raise AnswerError(f"answer '{answer.name}': {row.size} class scores but {len(labels)} labels")
        order = np.argsort(-np.where(np.isfinite(row), row, -np.inf), kind="stable")
        if d.multi_label:
            low = d.min_score if d.min_score is not None else MULTI_LABEL_SCORE
            chosen = [int(i) for i in order if row[i] >= low]
        else:
            chosen = [int(i) for i in order[: d.top_k] if d.min_score is None or row[i] >= d.min_score]
        out.append(tuple(Scored(label_of(labels, i), float(row[i])) for i in chosen))
    return out


def _labels(item: Item, multi: bool) -> Any:
    names = [s.label for s in item] if isinstance(item, tuple) else []
    return sorted(names) if multi else names


def measure(rule: ClassesRule, mine: list[Item], other: list[Item], multi: bool = False) -> CaseMeasure:
    agree = [_labels(m, multi) == _labels(o, multi) for m, o in zip(mine, other)]
    share = sum(agree) / len(agree) if agree else 1.0
    changes = [_change(m, o) for m, o, ok in zip(mine, other, agree) if not ok][:MAX_CHANGES]
    return CaseMeasure(
        figure=share,
        passed=share >= rule.min_agreement - 1e-12,
        figures={"agreement": share},
        note=None if share >= rule.min_agreement - 1e-12 else f"{sum(agree)} of {len(agree)} item(s) agree",
        changes=changes,
        empty=all(not o for o in other),
        items=len(mine),
    )


def _change(mine: Item, other: Item) -> str:
    def said(item: Item) -> str:
        return (
            ", ".join(f"'{s.label}' ({s.score:.3g})" for s in item[:3])
            if isinstance(item, tuple) and item
            else "nothing"
        )

    return f"{said(other)} → {said(mine)}"


def parse(value: Any, source: str) -> list[Item]:
    if not isinstance(value, list):
        raise AnswerError(f"{source}: a classes answer is a JSON array of {{label, score}} (or of such arrays)")
    nested = bool(value) and all(isinstance(v, list) for v in value)
    items = value if nested else [value]
    if len(items) > MAX_ITEMS:
        raise AnswerError(f"{source}: {len(items)} items; at most {MAX_ITEMS}")
    out: list[Item] = []
    for i, item in enumerate(items):
        if not isinstance(item, list) or len(item) > 10_000:
            raise AnswerError(f"{source}[{i}]: an item is an array of at most 10000 {{label, score}}")
        out.append(tuple(_scored(v, f"{source}[{i}]") for v in item))
    return out


def _scored(value: Any, where: str) -> Scored:
    if not isinstance(value, dict) or "label" not in value or set(value) - {"label", "score"}:
        raise AnswerError(f'{where}: a class is {{"label": ..., "score": ...}}')
    label, score = value["label"], value.get("score", math.nan)
    if not isinstance(label, (str, int)) or isinstance(label, bool) or len(str(label)) > 1024:
        raise AnswerError(f"{where}: label must be a string (at most 1024 characters)")
    if "score" in value and (
        isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)
    ):
        raise AnswerError(f"{where}: score must be a finite number")
    return Scored(str(label), float(score))


def gap(decoded: list[Item], stored: list[Item]) -> str | None:
    if len(decoded) != len(stored):
        return f"the declared steps give {len(decoded)} item(s), the stored answer {len(stored)}"
    for k, (d, s) in enumerate(zip(decoded, stored)):
        assert isinstance(d, tuple) and isinstance(s, tuple)
        where = f"item {k}: " if len(decoded) > 1 else ""
        if [x.label for x in d] != [x.label for x in s]:
            return f"{where}the declared steps give {_said(d)}, the stored answer {_said(s)}"
        for x, y in zip(d, s):
            if math.isfinite(y.score) and abs(x.score - y.score) > SAME_SCORE:
                return f"{where}'{x.label}' scores {x.score:.4g} by the declared steps, {y.score:.4g} as stored"
    return None


def _said(item: Item) -> str:
    if not isinstance(item, tuple) or not item:
        return "no class"
    return ", ".join(f"'{s.label}' ({s.score:.3g})" for s in item[:3])


def shown(items: list[Item]) -> list[JsonValue]:
    return [
        [{"label": s.label, "score": round(s.score, 4)} for s in item[:MAX_SHOWN_DETECTIONS]]
        for item in items
        if isinstance(item, tuple)
    ]


def edits(answer: ClassesAnswer, env: Env) -> Iterator[Edit]:
    d = answer.decode or ClassesDecode()
    for k in (1, 3, 5):
        if k != d.top_k:
            yield Edit(dataclasses.replace(answer, decode=dataclasses.replace(d, top_k=k)), f"top_k {k} for {d.top_k}")


class ClassesKind:
    name = "classes"
    rule = ClassesRule
    direction = "min"
    keeps_items = False
    wording = "agrees on the classes of a share of {v:.4g} of its items (min {t:g})"
    decode = staticmethod(decode)
    overall = staticmethod(no_overall)
    parse = staticmethod(parse)
    gap = staticmethod(gap)
    shown = staticmethod(shown)
    edits = staticmethod(edits)

    @staticmethod
    def threshold(rule: ClassesRule) -> float:
        return rule.min_agreement

    @staticmethod
    def measure(rule: ClassesRule, answer: ClassesAnswer, mine: list[Item], other: list[Item]) -> CaseMeasure:
        return measure(rule, mine, other, multi=bool(answer.decode and answer.decode.multi_label))


KIND = ClassesKind()
