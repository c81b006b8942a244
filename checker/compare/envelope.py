"""The input-size envelope: the sizes a release declares its dynamic axes accept (`comparison.envelope`), each a
point the graphs run at on every platform, so a backend that breaks only on large inputs is caught first.

    comparison:
      envelope:
        height: {min: 32, typical: 224, max: 1024}   # a dim named in inputs[].shape
        width: {min: 32, typical: 224, max: 1024}

Each point (min, typical, max: every named dim at that size at once) is made from the first case's inputs,
each named axis resampled to its size by nearest-neighbour indices: real values at the size asked for, with no
reference output. Its inputs are bounded before anything is allocated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from checker.manifest import views
from checker.manifest.model.comparison import Comparison, DimSizes
from checker.manifest.model.inputs import Input

if TYPE_CHECKING:
    from checker.context import Case

POINTS = ("min", "typical", "max")
MAX_POINT_BYTES = 256 << 20  # the inputs of one point: an envelope may not make the checker allocate more
PREFIX = "envelope-"  # a point's case name: envelope-min, envelope-typical, envelope-max


class EnvelopeError(ValueError):
    """An envelope the checker cannot make points of; the message says why, naming the field."""


@dataclass(frozen=True)
class Point:
    name: str  # min, typical or max
    sizes: dict[str, int]  # dim name -> size
    inputs: dict[str, np.ndarray]

    @property
    def case_name(self) -> str:
        return PREFIX + self.name

    def words(self) -> str:
        return f"the envelope's {self.name} size ({', '.join(f'{k} {v}' for k, v in self.sizes.items())})"


def declared(comparison: Comparison | None) -> dict[str, DimSizes]:
    """`comparison.envelope`: dim name -> its sizes (empty when none is declared)."""
    return views.envelope(comparison)


def axes(inputs: Sequence[Input], dims: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]]:
    """dim name -> the (input, axis) pairs that carry it, by the manifest's `inputs[].shape`."""
    out: dict[str, list[tuple[str, int]]] = {name: [] for name in dims}
    for entry in inputs:
        for axis, dim in enumerate(views.shape(entry)):
            if isinstance(dim, str) and dim in out:
                out[dim].append((entry.name, axis))
    return out


def points(inputs: Sequence[Input], comparison: Comparison | None, case: Case) -> list[Point]:
    """The envelope's points, made from `case`; an EnvelopeError when the envelope cannot be used."""
    dims = declared(comparison)
    carried = axes(inputs, dims)
    for name, limits in dims.items():
        if not carried[name]:
            raise EnvelopeError(f"comparison.envelope names '{name}', which no input's shape names")
        low, high = limits.min, limits.max
        typical = limits.typical if limits.typical is not None else low
        if not low <= typical <= high:
            raise EnvelopeError(
                f"comparison.envelope.{name}: min {low}, typical {typical}, max {high} are out of order"
            )
    out = []
    for point in POINTS:
        sizes = {name: getattr(limits, point) or 0 for name, limits in dims.items()}
        if any(size == 0 for size in sizes.values()):
            continue  # no typical size declared
        out.append(Point(point, sizes, _resampled(case, carried, sizes, point)))
    return out


def _resampled(
    case: Case, carried: dict[str, list[tuple[str, int]]], sizes: dict[str, int], point: str
) -> dict[str, np.ndarray]:
    shapes = {name: list(array.shape) for name, array in case.inputs.items()}
    for dim, places in carried.items():
        for name, axis in places:
            if name not in shapes or axis >= len(shapes[name]):
                raise EnvelopeError(f"case '{case.name}' has no axis {axis} in input '{name}' for dim '{dim}'")
            shapes[name][axis] = sizes[dim]
    total = sum(math.prod(shape) * case.inputs[name].dtype.itemsize for name, shape in shapes.items())
    if total > MAX_POINT_BYTES:
        raise EnvelopeError(
            f"the envelope's {point} size makes inputs of {total / (1 << 20):,.0f} MiB, more than the checker "
            f"allocates for one point ({MAX_POINT_BYTES >> 20} MiB)"
        )
    out = {}
    for name, array in case.inputs.items():
        value = array
        for dim, places in carried.items():
            for input_name, axis in places:
                if input_name == name:
                    index = (np.arange(sizes[dim]) * array.shape[axis]) // sizes[dim]  # nearest, top-left aligned
                    value = np.take(value, index, axis=axis)
        out[name] = np.ascontiguousarray(value)
    return out


def as_case(point: Point) -> Case:
    """The point as a case of the comparison (no reference output: only sentinels and other platforms judge it)."""
    from checker.context import Case  # the Context's module loads the manifest's: only a run with points needs it

    return Case(point.case_name, ["envelope"], point.inputs, {}, {}, ("comparison", "envelope"))
