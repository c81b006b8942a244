"""A declared NNAPI or CoreML provider, judged offline by onnxruntime's own mobile usability check.

No machine here has those providers; onnxruntime ships a check of which nodes they can take (compare.usability).
Its figures for every graph go into the report; a graph the tool finds unsuitable as it ships (suitability NO,
for every model format of the provider) is a `runtime.usability` warning quoting the tool.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker import findings as F
from checker.checks.comparison import not_run
from checker.checks.placement import declared_providers, graphs
from checker.compare.usability import CHECKED, UsabilityError, analyse
from checker.context import Context
from checker.findings import Finding
from checker.reports.model import NotRun
from checker.reports.parts.placement import Usability


def usability_stage(ctx: Context) -> Iterator[Finding]:
    mobile = [p for p in declared_providers(ctx) if p in CHECKED]
    if not mobile or not_run(ctx) is not None:
        return
    declared = (ctx.data.get("runtime") or {}).get("execution_providers") or []
    for provider in mobile:
        keys: tuple[str | int, ...] = ("runtime", "execution_providers")
        if provider in declared:
            keys = (*keys, declared.index(provider))
        for graph, path in graphs(ctx):
            try:
                entries = analyse(path, provider, graph)
            except UsabilityError as exc:
                ctx.not_run.append(NotRun(f"{provider} usability of {graph}", str(exc)))
                continue
            ctx.usability.extend(entries)
            if all(e.verdict == "NO" for e in entries):
                words = "; ".join(_words(e) for e in entries)
                yield F.warning(
                    F.RUNTIME_USABILITY,
                    f"{graph}: onnxruntime's mobile usability check finds declared execution provider {provider} "
                    f"unsuitable, even with fixed shapes: {words}",
                    **ctx.where(*keys),
                    graph=graph,
                    provider=provider,
                )


def _words(entry: Usability) -> str:
    """'CoreML MLProgram takes 0 of 23 nodes (4 in 4 partitions with fixed shapes): <the tool's last word>'."""
    fixed = entry.fixed_shape
    shapes = f" ({fixed.supported} in {fixed.partitions} partitions with fixed shapes)" if fixed else ""
    said = (fixed.recommendation if fixed else "") or entry.recommendation or entry.suitability
    return f"{entry.ep} takes {entry.supported} of {entry.nodes} nodes{shapes}: {said}"
