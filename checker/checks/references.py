"""Names the manifest uses among its own parts: unique names, rules on declared outputs, variants in order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.core import Keys
from checker.manifest.model.rules import RuleBase


def references_stage(ctx: Context) -> Iterator[Finding]:
    yield from _unique(ctx, [(e.name, e.at) for e in views.inputs(ctx.spec)], "input")
    yield from _unique(ctx, [(o.name, o.at) for o in views.outputs(ctx.spec)], "output")
    yield from _unique(ctx, [(v.name, v.at) for v in views.variants(ctx.spec)], "variant")
    yield from _ruled_outputs_declared(ctx)
    yield from _consistent_inputs(ctx)


# A preprocessing kind that makes one sort of tensor; `custom` and `derived` may make any.
_KIND_MEANING = {"image": "image", "text": "text", "audio": "audio", "tabular": "tabular"}


def _consistent_inputs(ctx: Context) -> Iterator[Finding]:
    """Declarations of one input that contradict each other: a layout of another rank than the shape, or a
    preprocessing kind that makes another sort of tensor than its meaning says."""
    for i, entry in enumerate(views.inputs(ctx.spec)):
        layout, shape = entry.layout, entry.shape
        if layout is not None and shape is not None and len(layout) != len(shape):
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"inputs[{i}].layout: '{layout}' names {len(layout)} axes, but the shape {shape} has {len(shape)}",
                **ctx.where("inputs", i, "layout"),
            )
        kind = None if entry.preprocessing is None else entry.preprocessing.kind
        wanted = _KIND_MEANING.get(str(kind))
        if wanted is not None and entry.meaning != wanted:
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"inputs[{i}].meaning: '{entry.meaning}', but preprocessing.kind '{kind}' makes {wanted} tensors",
                **ctx.where("inputs", i, "meaning"),
            )


def _unique(ctx: Context, named: list[tuple[Any, Keys]], what: str) -> Iterator[Finding]:
    """Each entry (its name and place) whose name an earlier one has."""
    seen: set[str] = set()
    for name, keys in named:
        if name in seen:
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"two {what}s are named '{name}'; {what} names must be unique",
                **ctx.where(*keys, "name"),
            )
        seen.add(name)


def _ruled_outputs_declared(ctx: Context) -> Iterator[Finding]:
    """`outputs` holds one entry per output a rule names: its meaning decides whether labels are required."""
    declared = {output.name for output in views.outputs(ctx.spec)}
    reported: set[str] = set()
    for place in views.rules(ctx.spec):
        if not isinstance(place.rule, RuleBase):
            continue  # a rule on an answer: the answers stage holds its `from` to the graph
        output, keys = place.rule.output, place.keys
        if output not in declared and output not in reported:
            reported.add(output)
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"a rule judges output '{output}', which outputs[] does not declare: "
                "declare it with its dtype, shape and meaning (and labels for logits, probabilities or "
                "scores)",
                **ctx.where(*keys, "output"),
            )
