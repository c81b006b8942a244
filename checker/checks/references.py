"""Names the manifest uses among its own parts: unique names, rules on declared outputs, variants in order."""

from __future__ import annotations

from collections.abc import Iterator

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views


def references_stage(ctx: Context) -> Iterator[Finding]:
    yield from _unique(ctx, "inputs", "input", [e.name for e in ctx.spec.inputs or ()])
    yield from _unique(ctx, "outputs", "output", [e.name for e in ctx.spec.outputs or ()])
    yield from _unique(ctx, "variants", "variant", [v.get("name") for v in ctx.data.get("variants") or []])
    yield from _ruled_outputs_declared(ctx)
    yield from _consistent_inputs(ctx)


# A preprocessing kind that makes one sort of tensor; `custom` and `derived` may make any.
_KIND_MEANING = {"image": "image", "text": "text", "audio": "audio", "tabular": "tabular"}


def _consistent_inputs(ctx: Context) -> Iterator[Finding]:
    """Declarations of one input that contradict each other: a layout of another rank than the shape, or a
    preprocessing kind that makes another sort of tensor than its meaning says."""
    for i, entry in enumerate(ctx.spec.inputs or ()):
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


def _unique(ctx: Context, part: str, what: str, names: list[str]) -> Iterator[Finding]:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"two {what}s are named '{name}'; {what} names must be unique",
                **ctx.where(part, i, "name"),
            )
        seen.add(name)


def _ruled_outputs_declared(ctx: Context) -> Iterator[Finding]:
    """`outputs` holds one entry per output a rule names: its meaning decides whether labels are required."""
    declared = {str(entry.get("name")) for entry in ctx.data.get("outputs") or []}
    reported: set[str] = set()
    for place in views.rules(ctx.data):
        output, keys = str(place.rule.get("output")), place.keys
        if output not in declared and output not in reported:
            reported.add(output)
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"a rule judges output '{output}', which outputs[] does not declare: "
                "declare it with its dtype, shape and meaning (and labels for logits, probabilities or "
                "scores)",
                **ctx.where(*keys, "output"),
            )
