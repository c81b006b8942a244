"""Validated reads of values the schema does not judge: another tool's pipeline file read by an importer, and
the bounds a parser holds a value the schema admitted to (a shorthand size within MAX_SIDE)."""

from __future__ import annotations

import math
from typing import Any

from checker.manifest.model.image import MAX_SIDE
from checker.preprocess.errors import PreprocessError


def number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
        raise PreprocessError(f"{where} is {str(value)[:40]}; expected a finite number")
    return float(value)


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)  # OverflowError for an integer no float holds, such as 10**400
    except OverflowError:
        return False


def numbers(value: Any, where: str) -> tuple[float, ...]:
    """One number or a non-empty list of numbers (a per-channel value)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    if not 1 <= len(items) <= 4:
        raise PreprocessError(f"{where} is {value!r}; expected one number or one per channel")
    return tuple(number(v, where) for v in items)


def side(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIDE:
        raise PreprocessError(f"{where} is {value!r}; expected an integer from 1 to {MAX_SIDE}")
    return value


def size_hw(value: Any, where: str) -> tuple[int, int]:
    """`size` as [h, w]; a single integer means a square."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return side(value[0], where), side(value[1], where)
    if isinstance(value, int) and not isinstance(value, bool):
        return side(value, where), side(value, where)
    raise PreprocessError(f"{where} is {value!r}; expected an integer or [height, width]")


def single_side(value: Any, where: str) -> int:
    """`size` for modes that set one side: an integer (a one-element list is accepted too)."""
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    return side(value, where)


def finite_pair(value: Any) -> tuple[float, float] | None:
    """`[low, high]` of finite numbers with low <= high, or None for anything else."""
    if not isinstance(value, list) or len(value) != 2:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return None
    low, high = float(value[0]), float(value[1])
    return (low, high) if low <= high else None
