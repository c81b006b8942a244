"""Names the manifest uses among its own parts: unique names, rules on declared outputs, variants in order."""

from __future__ import annotations

from collections.abc import Iterator

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views


def references_stage(ctx: Context) -> Iterator[Finding]:
    yield from _unique(ctx, "inputs", "input")
    yield from _unique(ctx, "outputs", "output")
    yield from _unique(ctx, "variants", "variant")
    yield from _ruled_outputs_declared(ctx)
    yield from _consistent_inputs(ctx)


# A preprocessing kind that makes one sort of tensor; `custom` and `derived` may make any.
_KIND_MEANING = {"image": "image", "text": "text", "audio": "audio", "tabular": "tabular"}


def _consistent_inputs(ctx: Context) -> Iterator[Finding]:
    """Declarations of one input that contradict each other: a layout of another rank than the shape, or a
    preprocessing kind that makes another sort of tensor than its meaning says."""
    for i, entry in enumerate(ctx.data.get("inputs") or []):
        layout, shape = entry.get("layout"), entry.get("shape")
        if isinstance(layout, str) and isinstance(shape, list) and len(layout) != len(shape):
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"inputs[{i}].layout: '{layout}' names {len(layout)} axes, but the shape {shape} has {len(shape)}",
                **ctx.where("inputs", i, "layout"),
            )
        kind = (entry.get("preprocessing") or {}).get("kind")
        meaning = entry.get("meaning")
        wanted = _KIND_MEANING.get(str(kind))
        if wanted is not None and meaning is not None and meaning != wanted:
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"inputs[{i}].meaning: '{meaning}', but preprocessing.kind '{kind}' makes {wanted} tensors",
                **ctx.where("inputs", i, "meaning"),
            )


def _unique(ctx: Context, part: str, what: str) -> Iterator[Finding]:
    seen: set[str] = set()
    for i, entry in enumerate(ctx.data.get(part) or []):
        name = entry.get("name")
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
        if "answer" in place.rule:
            continue  # a rule on an answer: the answers stage holds its `from` to the graph
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
