"""Dynamic axes proven: a graph that declares an axis dynamic must give each item of a stacked run its own output.

For each dynamic batch axis of the inputs (axes sharing its `dim_param` name move with it, wherever they sit in each
input: a recurrent state [2, batch, 128] stacks along axis 1), two cases are stacked
along it (or one case with itself, when no two cases can be stacked) and run once; each item's part of the
stacked outputs must match that item's single run within the rules' tolerance. A graph that declares a symbolic
batch but fixes it inside (a Reshape to [1, ...]) fails here, though every case of batch 1 passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from checker.compare.session import CaseRunError, run_case
from checker.readers.graphinfo import TensorSpec, graph_inputs, graph_outputs

if TYPE_CHECKING:
    import onnx

    from checker.context import Case

DEFAULT_ATOL, DEFAULT_RTOL = 1e-4, 1e-3  # batched kernels may sum in another order than single runs


@dataclass(frozen=True)
class Declared:
    """What the manifest says of one input: its shape, where an int fixes a dim, and its layout."""

    shape: Sequence[int | str] = ()
    layout: str | None = None


@dataclass(frozen=True)
class Axis:
    """One dynamic dim: its name (or `input:axis` for an unnamed one) and the input axes it sizes."""

    name: str
    axes: tuple[tuple[str, int], ...]  # (input name, axis)


@dataclass(frozen=True)
class Failure:
    axis: Axis
    cases: tuple[str, str]
    problem: str
    fixing_node: str | None  # "node 'r' (Reshape to [1, 12])" when the graph shows what fixes the size


def dynamic_axes(model: onnx.ModelProto, declared: Mapping[str, Declared]) -> list[Axis]:
    """The graph's dynamic batch axes: axis 0, or the axis the manifest's `layout` marks N. Only along a batch do
    stacked items stay apart (stacking along a spatial or sequence axis mixes them at the seam). Every other
    input's axis named like a batch joins it wherever it sits (a recurrent state [2, batch, 128] stacks along
    axis 1): the graph says those sizes are one. A batch the manifest fixes with an int on any axis it names is
    left alone: the release says it takes that size only, and its other inputs must keep to it too."""
    specs = [(s, declared.get(s.name, Declared())) for s in graph_inputs(model)]
    groups: dict[str, list[tuple[str, int]]] = {}
    for spec, entry in specs:
        batch = _batch_axis(spec, entry)
        if batch is not None:
            dim = (spec.shape or ())[batch]
            groups.setdefault(dim if isinstance(dim, str) else f"{spec.name}:{batch}", []).append((spec.name, batch))
    fixed: set[str] = set()
    for spec, entry in specs:
        shape = entry.shape
        for name, members in groups.items():
            if any(n == spec.name for n, _ in members):
                continue
            k = next((k for k, d in enumerate(spec.shape or ()) if d == name), None)
            if k is not None:
                members.append((spec.name, k))
                if k < len(shape) and isinstance(shape[k], int):
                    fixed.add(name)
    return [Axis(name, tuple(axes)) for name, axes in groups.items() if name not in fixed]


def _batch_axis(spec: TensorSpec, entry: Declared) -> int | None:
    """The input's own dynamic batch axis, unless the manifest fixes it."""
    shape, layout, dims = entry.shape, entry.layout, spec.shape or ()
    batch = layout.find("N") if layout is not None and len(layout) == len(dims) else 0
    if batch < 0 or batch >= len(dims) or isinstance(dims[batch], int):
        return None
    if batch < len(shape) and isinstance(shape[batch], int):
        return None
    return batch


def _stackable(axis: Axis, a: Case, b: Case) -> bool:
    """Two cases stack along `axis` when every other dim, and every input the axis does not size, agree."""
    along = dict(axis.axes)
    for name, x in a.inputs.items():
        y = b.inputs.get(name)
        if y is None or x.dtype != y.dtype or x.ndim != y.ndim:
            return False
        if name not in along:
            if x.shape != y.shape or not np.array_equal(x, y):
                return False
        elif any(i != along[name] and s != t for i, (s, t) in enumerate(zip(x.shape, y.shape))):
            return False
    return True


def pick_pair(axis: Axis, cases: Sequence[Case]) -> tuple[Case, Case]:
    """The first case and another it stacks with; or the first case twice."""
    first = cases[0]
    other = next((c for c in cases[1:] if _stackable(axis, first, c)), first)
    return first, other


def stacked_feed(axis: Axis, a: Case, b: Case) -> dict[str, np.ndarray]:
    along = dict(axis.axes)
    return {
        name: np.concatenate([np.asarray(x), np.asarray(b.inputs[name])], axis=along[name]) if name in along else x
        for name, x in a.inputs.items()
    }


def _output_axis(spec: TensorSpec | None, axis: Axis, one: np.ndarray, two: np.ndarray, both: np.ndarray) -> int | None:
    """The output axis the items were stacked along: the one named like the input's, else the one that grew."""
    fits = [
        k
        for k in range(both.ndim)
        if one.ndim == two.ndim == both.ndim
        and one.shape[k] + two.shape[k] == both.shape[k]
        and all(one.shape[i] == two.shape[i] == both.shape[i] for i in range(both.ndim) if i != k)
    ]
    named = [k for k, d in enumerate(spec.shape or ()) if d == axis.name] if spec is not None else []
    if named:  # the output says where the items lie: only that axis may hold them
        return next((k for k in named if k in fits), None)
    return fits[0] if fits else None


def compare_items(
    axis: Axis,
    singles: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    stacked: Mapping[str, np.ndarray],
    outputs: Mapping[str, TensorSpec],
    tolerance: Callable[[str], tuple[float, float]],
) -> str | None:
    """Why the stacked run's items differ from their single runs, or None when each matches."""
    one, two = singles
    for name, both in stacked.items():
        if name not in one or name not in two or np.asarray(both).dtype.kind not in "biuf":
            continue
        a, b, c = np.asarray(one[name]), np.asarray(two[name]), np.asarray(both)
        k = _output_axis(outputs.get(name), axis, a, b, c)
        if k is None:
            return (
                f"output '{name}' is {list(c.shape)} for the stacked run, where single runs give {list(a.shape)} "
                f"and {list(b.shape)}: the items are not kept apart along any axis"
            )
        atol, rtol = tolerance(name)
        for item, (got, want) in enumerate(zip(np.split(c, [a.shape[k]], axis=k), (a, b))):
            if not np.allclose(got, want, atol=atol, rtol=rtol, equal_nan=True):
                worst = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
                return (
                    f"item {item} of output '{name}' differs from its single run by up to {worst:.3g} "
                    f"(tolerance atol {atol:g}, rtol {rtol:g})"
                )
    return None


def fixing_nodes(model: onnx.ModelProto, axis: Axis, sizes: set[int]) -> str | None:
    """A Reshape whose constant target shape holds a literal size where the dynamic axis should pass through."""
    from onnx import numpy_helper

    constants = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    constants[node.output[0]] = attr.t
    positions = {a for _, a in axis.axes}
    for node in model.graph.node:
        if node.op_type != "Reshape" or len(node.input) < 2 or node.input[1] not in constants:
            continue
        target = [int(v) for v in numpy_helper.to_array(constants[node.input[1]]).reshape(-1)]
        if any(p < len(target) and target[p] in sizes for p in positions):
            return f"node '{node.name or node.output[0]}' (Reshape to {target})"
    return None


def prove_axes(
    model: onnx.ModelProto,
    session: Any,
    cases: Sequence[Case],
    declared: Mapping[str, Declared],
    tolerance: Callable[[str], tuple[float, float]],
    timeout: float,
) -> Iterator[Failure]:
    """One stacked run per dynamic axis; a Failure for each axis whose items do not match their single runs."""
    if not cases:
        return
    outputs = {s.name: s for s in graph_outputs(model)}
    for axis in dynamic_axes(model, declared):
        a, b = pick_pair(axis, cases)
        if any(name not in a.inputs for name, _ in axis.axes):
            continue
        sizes = {int(a.inputs[name].shape[k]) for name, k in axis.axes}
        try:
            singles = (run_case(session, a.inputs, timeout), run_case(session, b.inputs, timeout))
        except CaseRunError:
            continue  # a case that fails alone is the comparison's to report
        try:
            stacked = run_case(session, stacked_feed(axis, a, b), timeout)
        except CaseRunError as exc:
            yield Failure(axis, (a.name, b.name), f"the stacked run fails: {exc}", fixing_nodes(model, axis, sizes))
            continue
        problem = compare_items(axis, singles, stacked, outputs, tolerance)
        if problem is not None:
            yield Failure(axis, (a.name, b.name), problem, fixing_nodes(model, axis, sizes))
