"""What a decoder gives for one batch item, by kind: the answer a product shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

Box = tuple[float, float, float, float]  # x1, y1, x2, y2


@dataclass(frozen=True)
class Detection:
    box: Box
    label: str
    score: float


@dataclass(frozen=True)
class Detections:
    """The boxes an item shows, best first, and the best candidates the threshold dropped (to say that a lost box
    scored 0.24 against the threshold's 0.25, rather than that it vanished)."""

    kept: tuple[Detection, ...]
    below: tuple[Detection, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Scored:
    """A class and its score (classes answers hold a tuple of them, best first)."""

    label: str
    score: float


@dataclass(frozen=True)
class Decision:
    label: str
    score: float
    distance: float  # |score - threshold|: how far the item is from flipping


# One item's answer: classes a tuple of Scored, detections Detections, text a string, embedding, values and mask
# an array, decision a Decision.
Item = Union[tuple[Scored, ...], Detections, str, np.ndarray, Decision]  # noqa: UP007 (a runtime alias on 3.10)


def is_empty(item: Any) -> bool:
    """Nothing shown: no box, no class, no character."""
    if isinstance(item, Detections):
        return not item.kept
    if isinstance(item, (tuple, str)):
        return len(item) == 0
    if isinstance(item, np.ndarray):
        return item.size == 0
    return False
