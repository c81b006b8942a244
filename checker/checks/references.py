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
