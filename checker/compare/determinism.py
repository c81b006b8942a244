"""Determinism: the first few cases of a graph run a second time, before its rules are judged.

A graph that gives different outputs for the same inputs (a RandomNormal or RandomUniform node, say)
has figures that belong to one run only: a variant judged on them may be blamed for noise the graph makes
itself. The second run happens in the same session, so it costs a few cases, not a session.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from checker import findings as F
from checker.compare.session import CaseRunError, run_case
from checker.findings import Finding

if TYPE_CHECKING:
    from checker.context import Case, Context

REPEATED = 2  # cases run twice per graph
RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
Outputs = Mapping[str, np.ndarray]


def random_nodes(model: Any) -> list[str]:
    """The graph's random nodes, each marked seeded or not. A seed does not make runs agree: onnxruntime seeds
    the node's generator once per session and draws on from it in every run."""
    if model is None:
        return []
    out = []
    for node in model.graph.node:
        if node.op_type in RANDOM_OPS:
            name = node.name or f"{node.op_type} -> {', '.join(node.output)}"
            seeded = any(a.name == "seed" for a in node.attribute)
            out.append(f"{name} ({node.op_type}, {'seeded' if seeded else 'no seed'})")
    return out


def _difference(first: Outputs, second: Outputs) -> tuple[str, float] | None:
    """The first output that differs between two runs, and by how much at most; None when they are equal."""
    for name, one in first.items():
        two = second.get(name)
        if two is None or one.shape != two.shape or one.dtype != two.dtype:
            return name, float("inf")
        if not np.array_equal(one, two, equal_nan=one.dtype.kind in "fc"):
            if one.dtype.kind in "fciu":
                return name, float(np.max(np.abs(one.astype(np.float64) - two.astype(np.float64))))
            return name, float("inf")
    return None


def repeat_findings(
    ctx: Context, graph: str, session: Any, firsts: Sequence[tuple[Case, Outputs]], model: Any
) -> Iterator[Finding]:
    """comparison.nondeterministic when a second run of one of `firsts` gives other outputs."""
    for case, outputs in firsts[:REPEATED]:
        try:
            again = run_case(session, case.inputs, ctx.options.case_timeout_s)
        except CaseRunError:
            continue  # the first run was judged; a failing second one says nothing about its figures
        differs = _difference(outputs, again)
        if differs is None:
            continue
        output, by = differs
        nodes = random_nodes(model)
        cause = f"; its random nodes: {', '.join(nodes[:5])}" if nodes else ""
        yield F.error(
            F.COMPARISON_NONDETERMINISTIC,
            f"{graph}: two runs of case '{case.name}' give different outputs ('{output}' differs by up to {by:.4g}): "
            f"the graph is not deterministic, so its figures below are those of one run{cause}",
            **ctx.where(*case.where),
            graph=graph,
            case=case.name,
            output=output,
            difference=by,
            nodes=nodes,
        )
        return
