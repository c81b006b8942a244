"""inputs.range: every comparison tensor lies inside its input's declared range, or the one its preprocessing
implies (scale, mean and std for images; the sample range for audio)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker import findings as F
from checker.context import Case, Context
from checker.findings import Finding

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
    for i, entry in enumerate(ctx.data.get("inputs") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        bounds = declared_bounds(entry.get("range")) or implied_bounds(ctx, entry)
        if bounds is None:
            continue
        keys = ("inputs", i, "range") if bounds.implied_by is None else ("inputs", i, "preprocessing")
        for case in ctx.cases:
            stored = case.inputs.get(entry["name"])
            if stored is not None and stored.size and stored.dtype.kind in "fiub":
                yield from _check(ctx, case, entry["name"], stored, bounds, keys)


def declared_bounds(value: Any) -> Bounds | None:
    pair = _pair(value)
    return None if pair is None else Bounds((pair[0],), (pair[1],), None)


def _pair(value: Any) -> tuple[float, float] | None:
    if not isinstance(value, list) or len(value) != 2:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return None
    low, high = float(value[0]), float(value[1])
    return (low, high) if low <= high else None


def implied_bounds(ctx: Context, entry: dict[str, Any]) -> Bounds | None:
    prep = entry.get("preprocessing")
    if not isinstance(prep, dict):
        return None
    if prep.get("kind") == "audio":
        pair = _pair(prep.get("range"))
        return None if pair is None else Bounds((pair[0],), (pair[1],), None, "preprocessing.range")
    if prep.get("kind") == "image":
        return _image_bounds(ctx, prep, entry)
    return None


def _image_bounds(ctx: Context, prep: dict[str, Any], entry: dict[str, Any]) -> Bounds | None:
    from checker.preprocess.errors import PreprocessError
    from checker.preprocess.layout import image_layout
    from checker.preprocess.spec_image import ImageSpec

    try:
        spec = ImageSpec.from_manifest(prep, ctx.root)
        layout = image_layout(entry.get("layout"), entry.get("shape"))
    except PreprocessError:
        return None  # the fidelity stage reports an unusable preprocessing
    if spec.steps is not None:
        return _step_bounds(spec.steps, layout)
    if spec.resize.library == "torch" and spec.resize.interpolation in ("bicubic", "lanczos"):
        return None  # torch does not clamp: bicubic overshoots 0-255
    n = max(len(spec.mean), len(spec.std))
    mean = np.broadcast_to(np.asarray(spec.mean, np.float64), (n,))
    std = np.broadcast_to(np.asarray(spec.std, np.float64), (n,))
    ends = np.stack([-mean / std, (255 * spec.scale - mean) / std]) + 0.0  # + 0.0 turns -0.0 into 0.0
    low, high = ends.min(axis=0), ends.max(axis=0)
    axis = layout.index("C") if n > 1 and "C" in layout else None
    if axis is None:
        low, high = low.min(keepdims=True), high.max(keepdims=True)
    why = f"scale {spec.scale:g}, mean {_list(spec.mean)}, std {_list(spec.std)}"
    slack = IMPLIED_SLACK * float(np.max(high - low))
    return Bounds(tuple(map(float, low)), tuple(map(float, high)), axis, why, slack)


def _step_bounds(steps: tuple[Any, ...], layout: str) -> Bounds | None:
    from checker.preprocess.pipeline import implied_range

    found = implied_range(steps)
    if found is None:
        return None
    low, high = found
    axis = layout.index("C") if len(low) > 1 and "C" in layout else None
    if axis is None:
        low, high = low.min(keepdims=True), high.max(keepdims=True)
    why = "the declared steps (0-255 through their scale, normalize and pad values)"
    slack = IMPLIED_SLACK * float(np.max(high - low))
    return Bounds(tuple(map(float, low)), tuple(map(float, high)), axis, why, slack)


def _list(values: tuple[float, ...]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


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
