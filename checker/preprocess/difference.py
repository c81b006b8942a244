"""How far a rebuilt tensor is from the stored one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Difference:
    """Where a rebuilt tensor and a stored one disagree beyond the tolerance."""

    rebuilt_shape: tuple[int, ...]
    stored_shape: tuple[int, ...]
    largest: float | None = None  # None when the shapes differ
    index: tuple[int, ...] | None = None
    rebuilt_value: float | None = None
    stored_value: float | None = None
    count: int = 0  # elements beyond the tolerance
    size: int = 0

    @property
    def same_shape(self) -> bool:
        return self.rebuilt_shape == self.stored_shape


def difference(
    rebuilt: np.ndarray, stored: np.ndarray, tolerance: float, first: bool = False, relative: bool = False
) -> Difference | None:
    """None when every element agrees within `tolerance` (times max(1, |stored|) when `relative`, as tabular
    features of any magnitude are compared); else the largest difference (or the first, for token ids, where
    the first disagreement is what a reader needs)."""
    shapes = (tuple(int(d) for d in rebuilt.shape), tuple(int(d) for d in stored.shape))
    if shapes[0] != shapes[1]:
        return Difference(*shapes)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(rebuilt.astype(np.float64) - stored.astype(np.float64))
    diff[np.isnan(diff)] = np.inf  # NaN in the stored tensor is never a match
    if relative:
        with np.errstate(invalid="ignore", over="ignore"):
            over = diff > tolerance * np.maximum(1.0, np.abs(stored.astype(np.float64)))
    else:
        over = diff > tolerance
    count = int(np.count_nonzero(over))
    if count == 0:
        return None
    flat = int(np.argmax(over)) if first else int(np.argmax(diff))
    index = tuple(int(i) for i in np.unravel_index(flat, diff.shape))
    return Difference(
        *shapes,
        largest=float(diff.max()),
        index=index,
        rebuilt_value=float(rebuilt[index]),
        stored_value=float(stored[index]),
        count=count,
        size=int(diff.size),
    )
