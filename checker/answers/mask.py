"""`kind: mask`: a label map per item, by a threshold (binary) or the argmax over a class axis, optionally taken back
to the raw image's size; judged by the mean over labels present of the intersection over union."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from checker.answers.errors import AnswerError
from checker.answers.items import Item
from checker.answers.kind import CaseMeasure, Edit, Env, no_overall, per_item
from checker.manifest.model.answers import MaskAnswer, MaskRule
from checker.reports.parts.values import JsonValue

MAX_PIXELS = 50_000_000
SAME_IOU = 0.99


def decode(answer: MaskAnswer, tensors: Sequence[np.ndarray], env: Env, tweak: Any = None) -> list[Item]:
    d = answer.decode
    x = np.asarray(tensors[0])
    if d.argmax is not None:
        if not -x.ndim <= d.argmax < x.ndim:
            raise AnswerError(f"answer '{answer.name}': argmax axis {d.argmax} does not exist in {list(x.shape)}")
        maps = np.asarray(x).argmax(axis=d.argmax)
    else:
        maps = (np.asarray(x, np.float64) > float(d.threshold or 0.0)).astype(np.int64)
        while maps.ndim > 2 and maps.shape[-3] == 1:  # a [batch, 1, H, W] probability map
            maps = maps.reshape(maps.shape[:-3] + maps.shape[-2:])
    items = per_item(maps, 2, "a mask ([height, width] per item)")
    if d.to_raw is not None:
        place = env.placement(d.to_raw)
        items = [place.mask_to_raw(m) for m in items]
    return [np.asarray(m, np.int64) for m in items]


def mean_iou(a: np.ndarray, b: np.ndarray) -> float:
    """The mean over labels present in either map of their intersection over union (background included)."""
    if a.shape != b.shape:
        return 0.0
    labels = np.union1d(np.unique(a), np.unique(b))
    if labels.size == 0:
        return 1.0
    ious = []
    for label in labels:
        x, y = a == label, b == label
        ious.append(int(np.count_nonzero(x & y)) / max(1, int(np.count_nonzero(x | y))))
    return float(np.mean(ious))


def measure(rule: MaskRule, answer: MaskAnswer, mine: list[Item], other: list[Item]) -> CaseMeasure:
    values = [mean_iou(np.asarray(m), np.asarray(o)) for m, o in zip(mine, other)]
    low = min(values) if values else 1.0
    ok = low >= rule.min_iou - 1e-12
    return CaseMeasure(
        low, ok, {"mean_iou": low}, None if ok else f"mean IoU {low:.4g} (min {rule.min_iou:g})",
        [] if ok else [f"mask mean IoU {low:.3g}"], empty=all(not np.asarray(o).any() for o in other), items=len(mine),
    )  # fmt: skip


def parse(value: Any, source: str) -> list[Item]:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iub" or value.ndim not in (2, 3):
        raise AnswerError(f"{source}: a mask answer is label indices, [height, width] or [items, height, width]")
    if value.size > MAX_PIXELS:
        raise AnswerError(f"{source}: more than {MAX_PIXELS} pixels")
    return [np.asarray(m, np.int64) for m in (value if value.ndim == 3 else value[None])]


def gap(decoded: list[Item], stored: list[Item]) -> str | None:
    if len(decoded) != len(stored):
        return f"the declared steps give {len(decoded)} mask(s), the stored answer {len(stored)}"
    for k, (d, s) in enumerate(zip(decoded, stored)):
        d, s = np.asarray(d), np.asarray(s)
        where = f"item {k}: " if len(decoded) > 1 else ""
        if d.shape != s.shape:
            made, kept = "x".join(map(str, d.shape)), "x".join(map(str, s.shape))
            return f"{where}the declared steps give a {made} map, the stored one is {kept}"
        iou = mean_iou(d, s)
        if iou < SAME_IOU:
            return f"{where}the maps overlap by a mean IoU of {iou:.4g}"
    return None


def shown(items: list[Item]) -> list[JsonValue]:
    out: list[JsonValue] = []
    for m in items:
        labels, counts = np.unique(np.asarray(m), return_counts=True)
        out.append(
            {
                "shape": list(np.asarray(m).shape),
                "pixels": {str(int(k)): int(n) for k, n in zip(labels[:256], counts[:256])},
            }
        )
    return out


def edits(answer: MaskAnswer, env: Env) -> Iterator[Edit]:
    d = answer.decode
    if d.to_raw is not None:
        yield Edit(dataclasses.replace(answer, decode=dataclasses.replace(d, to_raw=None)), "to_raw left out")
    if d.threshold is not None:
        for t in (0.0, 0.3, 0.5, 0.7):
            if t != d.threshold:
                yield Edit(
                    dataclasses.replace(answer, decode=dataclasses.replace(d, threshold=t)),
                    f"threshold {t:g} for {d.threshold:g}",
                )


class MaskKind:
    name = "mask"
    rule = MaskRule
    direction = "min"
    keeps_items = False
    wording = "has a mean IoU of {v:.4g} (min {t:g})"
    decode = staticmethod(decode)
    overall = staticmethod(no_overall)
    parse = staticmethod(parse)
    measure = staticmethod(measure)
    gap = staticmethod(gap)
    shown = staticmethod(shown)
    edits = staticmethod(edits)

    @staticmethod
    def threshold(rule: MaskRule) -> float:
        return rule.min_iou


KIND = MaskKind()
