"""Labels: readable, as many as the labelled axis is long, and distinct."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.readers.graphinfo import graph_outputs
from checker.readers.labelfiles import LabelError, from_file, from_metadata


def labels_stage(ctx: Context) -> Iterator[Finding]:
    for i, entry in enumerate(ctx.data.get("outputs") or []):
        spec = entry.get("labels")
        if not spec:
            continue
        where = ctx.where("outputs", i, "labels")
        try:
            labels = _read(ctx, spec)
        except LabelError as exc:
            yield F.error(F.LABELS_INVALID, f"labels of '{entry['name']}': {exc}", **where)
            continue
        if labels is None:
            continue
        ctx.labels[entry["name"]] = labels
        if spec.get("values") == "index":
            # Class indices, not scores: no axis to count; each value is checked against the file on the cases.
            ctx.index_outputs.add(entry["name"])
        else:
            yield from _count(ctx, entry, spec, labels, where)
        yield from _duplicates(entry["name"], labels, where)


def _read(ctx: Context, spec: dict[str, Any]) -> list[str] | None:
    if "path" in spec:
        path = ctx.path(spec["path"])
        return None if path is None else from_file(path, spec["path"])
    if ctx.graph is None:
        return None  # the graph stage already said why it is unusable
    return from_metadata(ctx.graph, spec["metadata_key"])


def axis_size(ctx: Context, entry: dict[str, Any], axis: int) -> int | None:
    """The labelled axis' size: from the manifest shape, else the graph's static dim."""
    shapes: list[Any] = [entry.get("shape")]
    if ctx.graph is not None:
        shapes += [s.shape for s in graph_outputs(ctx.graph) if s.name == entry["name"]]
    for shape in shapes:
        if shape and -len(shape) <= axis < len(shape) and isinstance(shape[axis], int):
            return int(shape[axis])
    return None


def _count(
    ctx: Context, entry: dict[str, Any], spec: dict[str, Any], labels: list[str], where: dict[str, Any]
) -> Iterator[Finding]:
    axis = int(spec.get("axis", -1))
    size = axis_size(ctx, entry, axis)
    if size is None:
        ctx.label_axes[entry["name"]] = axis  # counted on the reference outputs (reference_labels_stage)
        return
    if size != len(labels):
        yield F.error(
            F.LABELS_COUNT,
            f"'{entry['name']}' has {size} entries on axis {axis}, but its label mapping has {len(labels)} labels",
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
            for c in ctx.cases or []
            if name in c.expected and -c.expected[name].ndim <= axis < c.expected[name].ndim
        }
        for size in sorted(sizes - {len(labels)})[:1]:
            index = next(i for i, e in enumerate(ctx.data["outputs"]) if e["name"] == name)
            yield F.error(
                F.LABELS_COUNT,
                f"'{name}' has {size} entries on axis {axis} in the reference outputs, "
                f"but its label mapping has {len(labels)} labels",
                **ctx.where("outputs", index, "labels"),
                expected=size,
                actual=len(labels),
            )


def _duplicates(name: str, labels: list[str], where: dict[str, Any]) -> Iterator[Finding]:
    repeated = [label for label, n in Counter(labels).items() if n > 1]
    if repeated:
        shown = ", ".join(repr(r) for r in repeated[:5]) + (" ..." if len(repeated) > 5 else "")
        yield F.warning(F.LABELS_DUPLICATE, f"labels of '{name}' repeat: {shown}", **where)
