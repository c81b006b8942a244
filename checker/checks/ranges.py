"""inputs.range: every comparison tensor lies inside its input's declared range, or the one its preprocessing
implies (scale, mean and std for images; the sample range for audio).

The implied range comes from the input's kind, on the block parsed once for the bundle (checks/prepared.py).
A block that cannot be parsed is reported here only when no case's raw file rebuilds the input: else the
fidelity stage reports it, and the error is said once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker import findings as F
from checker.checks.prepared import has_raw, names_unusable_file, prepared
from checker.context import Case, Context
from checker.findings import Finding
from checker.manifest.model.inputs import Preprocessing
from checker.preprocess import KIND_NAMES
from checker.preprocess.errors import CannotReproduce, PreprocessError
from checker.preprocess.fields import finite_pair
from checker.reports.model import NotRun

# Float rounding lets a value land a hair outside the bounds the preprocessing implies.
IMPLIED_SLACK = 1e-5


@dataclass(frozen=True)
class Bounds:
    low: tuple[float, ...]  # one per channel, or one for the whole tensor
    high: tuple[float, ...]
    axis: int | None  # the channel axis the per-channel bounds run along
    implied_by: str | None = None  # None for a declared range; else what implies it
    slack: float = 0.0  # accepted beyond the bounds (float rounding), never shown

    def arrays(self, ndim: int, slack: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        shape = [1] * ndim
        if self.axis is not None:
            shape[self.axis] = len(self.low)
        low, high = np.asarray(self.low, np.float64), np.asarray(self.high, np.float64)
        return (low - slack).reshape(shape), (high + slack).reshape(shape)

    def text(self) -> str:
        return f"[{min(self.low):.6g}, {max(self.high):.6g}]"


def range_stage(ctx: Context) -> Iterator[Finding]:
    if ctx.cases is None:
        return
    for i, entry in enumerate(ctx.spec.inputs or ()):
        name = entry.name
        stored = [(case, case.inputs.get(name)) for case in ctx.cases]
        checked = [(case, t) for case, t in stored if t is not None and t.size and t.dtype.kind in "fiub"]
        bounds = declared_bounds(entry.range)
        prep = entry.preprocessing
        if bounds is None and prep is not None and prep.kind in KIND_NAMES:
            try:
                bounds = implied_bounds(ctx, name)
            except PreprocessError as e:
                if checked:
                    yield from _unusable(ctx, i, name, prep, e)
                continue
        if bounds is None:
            continue
        keys = ("inputs", i, "range") if bounds.implied_by is None else ("inputs", i, "preprocessing")
        for case, tensor in checked:
            yield from _check(ctx, case, name, tensor, bounds, keys)


def declared_bounds(value: Any) -> Bounds | None:
    pair = finite_pair(value)
    return None if pair is None else Bounds((pair[0],), (pair[1],), None)


def implied_bounds(ctx: Context, name: str) -> Bounds | None:
    """The range the input's preprocessing implies, from its block as parsed once for the bundle."""
    found = prepared(ctx).implied_range(name)
    if found is None:
        return None
    low, high, axis = found.low, found.high, found.axis
    if axis is None:
        low, high = low.min(keepdims=True), high.max(keepdims=True)
    slack = IMPLIED_SLACK * float(np.max(high - low))
    return Bounds(tuple(map(float, low)), tuple(map(float, high)), axis, found.why, slack)


def _unusable(ctx: Context, i: int, name: str, prep: Preprocessing, e: PreprocessError) -> Iterator[Finding]:
    """A block the range cannot be implied from, said once: here, unless a case's raw file rebuilds the input
    (then the fidelity stage says it), or the block names a file the files stage refused."""
    inputs = prepared(ctx)
    if has_raw(ctx.rebuilt_cases(), inputs, name) or names_unusable_file(ctx, prep):
        return
    if isinstance(e, CannotReproduce):
        ctx.not_run.append(NotRun(f"range of input '{name}'", f"cannot be implied here: {e}"))
        return
    msg = f"input '{name}': the declared preprocessing cannot be applied: {e}"
    yield F.error(F.INPUTS_FIDELITY, msg, **ctx.where("inputs", i, "preprocessing"), input=name)


@dataclass(frozen=True)
class Violation:
    count: int
    index: tuple[int, ...]
    value: float
    allowed: tuple[float, float]  # the bounds at `index`
    span: str  # the tensor's finite minimum and maximum


def violation(stored: np.ndarray, bounds: Bounds) -> Violation | None:
    """Where `stored` leaves `bounds` (NaN counts as outside), or None."""
    low, high = bounds.arrays(stored.ndim, bounds.slack)
    values = stored.astype(np.float64)
    outside = ~((values >= low) & (values <= high))
    low, high = bounds.arrays(stored.ndim)
    count = int(np.count_nonzero(outside))
    if count == 0:
        return None
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(outside)), outside.shape))
    allowed = (
        float(np.broadcast_to(low, values.shape)[index]),
        float(np.broadcast_to(high, values.shape)[index]),
    )
    finite = values[np.isfinite(values)]
    span = f"[{finite.min():.6g}, {finite.max():.6g}]" if finite.size else "no finite value"
    return Violation(count, index, float(values[index]), allowed, span)


def _check(
    ctx: Context, case: Case, name: str, stored: np.ndarray, bounds: Bounds, keys: tuple[str | int, ...]
) -> Iterator[Finding]:
    if bounds.axis is not None and (stored.ndim <= bounds.axis or stored.shape[bounds.axis] != len(bounds.low)):
        bounds = Bounds((min(bounds.low),), (max(bounds.high),), None, bounds.implied_by, bounds.slack)
    found = violation(stored, bounds)
    if found is None:
        return
    if bounds.implied_by is None:
        what = f"the declared range {bounds.text()}"
    else:
        what = f"the range {bounds.text()} the preprocessing implies ({bounds.implied_by}; none is declared)"
    per_channel = " for its channel" if bounds.axis is not None else ""
    message = (
        f"case '{case.name}', input '{name}': {found.count} of {stored.size} values lie outside {what}; "
        f"the first, at {list(found.index)}, is {found.value:.6g}, outside "
        f"[{found.allowed[0]:.6g}, {found.allowed[1]:.6g}]{per_channel} (the tensor spans {found.span})"
    )
    yield F.error(
        F.INPUTS_RANGE,
        message,
        **ctx.where(*keys),
        case=case.name,
        input=name,
        outside=found.count,
        size=int(stored.size),
        index=list(found.index),
        value=_json_number(found.value),
        allowed=list(found.allowed),
        implied_by=bounds.implied_by,
    )


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


def superseded(findings: list[Finding]) -> list[Finding]:
    """The findings less each case's inputs.range that an explained inputs.fidelity of the same case and input
    makes redundant: the range only says the values are off, the fidelity finding says which edit made them so
    (and its fix follows it), so the reader gets the cause once, not a generic fix first."""
    explained = {
        (f.details.get("case"), f.details.get("input"))
        for f in findings
        if f.id == F.INPUTS_FIDELITY and f.details.get("explanation")
    }
    return [
        f
        for f in findings
        if not (f.id == F.INPUTS_RANGE and (f.details.get("case"), f.details.get("input")) in explained)
    ]
