"""Labels: readable, as many as the labelled axis is long, and distinct."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.tensors import Labels, Output
from checker.readers.graphinfo import graph_outputs
from checker.readers.labelfiles import LabelError, from_file, from_metadata


def labels_stage(ctx: Context) -> Iterator[Finding]:
    for output in views.outputs(ctx.spec):
        spec = output.labels
        if spec is None:
            continue
        where = ctx.where(*spec.at)
        try:
            labels = _read(ctx, spec)
        except LabelError as exc:
            yield F.error(F.LABELS_INVALID, f"labels of '{output.name}': {exc}", **where)
            continue
        if labels is None:
            continue
        ctx.labels[output.name] = labels
        if spec.values == "index":
            # Class indices, not scores: no axis to count; each value is checked against the file on the cases.
            ctx.index_outputs.add(output.name)
        else:
            yield from _count(ctx, output, spec, labels, where)
        yield from _duplicates(output.name, labels, where)


def _read(ctx: Context, spec: Labels) -> list[str] | None:
    if spec.path is not None:
        path = ctx.path(spec.path)
        return None if path is None else from_file(path, spec.path)
    if ctx.graph is None or spec.metadata_key is None:
        return None  # the graph stage already said why it is unusable
    return from_metadata(ctx.graph, spec.metadata_key)


def axis_size(ctx: Context, output: Output, axis: int) -> int | None:
    """The labelled axis' size: from the manifest shape, else the graph's static dim."""
    shapes: list[Any] = [output.shape]
    if ctx.graph is not None:
        shapes += [s.shape for s in graph_outputs(ctx.graph) if s.name == output.name]
    for shape in shapes:
        if shape and -len(shape) <= axis < len(shape) and isinstance(shape[axis], int):
            return int(shape[axis])
    return None


def _count(ctx: Context, output: Output, spec: Labels, labels: list[str], where: dict[str, Any]) -> Iterator[Finding]:
    axis = spec.axis if spec.axis is not None else -1
    size = axis_size(ctx, output, axis)
    if size is None:
        ctx.label_axes[output.name] = axis  # counted on the reference outputs (reference_labels_stage)
        return
    if size != len(labels):
        yield F.error(
            F.LABELS_COUNT,
            f"'{output.name}' has {size} entries on axis {axis}, but its label mapping has {len(labels)} labels",
            **where,
            expected=size,
            actual=len(labels),
        )


def reference_labels_stage(ctx: Context) -> Iterator[Finding]:
    """Labels of an output whose labelled axis is dynamic, counted against the reference outputs once the cases
    stage has loaded them (the whole set's, before a shard keeps its share)."""
    for name, axis in ctx.label_axes.items():
        labels = ctx.labels.get(name, [])
        sizes = {
            c.expected[name].shape[axis]
            for c in ctx.loaded_cases
            if name in c.expected and -c.expected[name].ndim <= axis < c.expected[name].ndim
        }
        for size in sorted(sizes - {len(labels)})[:1]:
            output = next(o for o in views.outputs(ctx.spec) if o.name == name)
            yield F.error(
                F.LABELS_COUNT,
                f"'{name}' has {size} entries on axis {axis} in the reference outputs, "
                f"but its label mapping has {len(labels)} labels",
                **ctx.where(*output.at, "labels"),
                expected=size,
                actual=len(labels),
            )


def _duplicates(name: str, labels: list[str], where: dict[str, Any]) -> Iterator[Finding]:
    repeated = [label for label, n in Counter(labels).items() if n > 1]
    if repeated:
        shown = ", ".join(repr(r) for r in repeated[:5]) + (" ..." if len(repeated) > 5 else "")
        yield F.warning(F.LABELS_DUPLICATE, f"labels of '{name}' repeat: {shown}", **where)
