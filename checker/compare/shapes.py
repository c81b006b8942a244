"""The shapes onnxruntime actually returns, held against the graph's and the manifest's declarations.

A graph's declared output shape is only an annotation: onnxruntime neither checks nor enforces it, so an
exported recogniser may declare [1, seqlen] and return [T, 1, C]. Only a run shows it, and only a message
that gives all three shapes (returned, declared by the graph, declared by the manifest) lets the author see
which of them is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.findings import Finding
from checker.manifest import views
from checker.readers.graphinfo import Dim, graph_outputs

if TYPE_CHECKING:
    import numpy as np

    from checker.context import Context

Declared = tuple[Dim, ...] | None


def fits(shape: Sequence[int], declared: Declared) -> bool:
    """Whether a returned shape agrees with a declaration: same rank, equal static sizes (None: no shape)."""
    if declared is None:
        return True
    if len(shape) != len(declared):
        return False
    return all(not isinstance(want, int) or want == have for want, have in zip(declared, shape))


def show(declared: Declared) -> str:
    if declared is None:
        return "no shape"
    return "[" + ", ".join("?" if d is None else str(d) for d in declared) + "]"


@dataclass
class ShapeWatch:
    """The first case on which each output's returned shape leaves a declaration, for one graph."""

    graph: str  # "the baseline" or "variant 'name'"
    from_graph: dict[str, Declared]
    from_manifest: dict[str, tuple[Declared, int]]  # output -> (declared shape, index in `outputs`)
    seen: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)  # output -> (case, shape)

    def add(self, case: str, outputs: Mapping[str, np.ndarray]) -> None:
        for name, value in outputs.items():
            shape = tuple(int(d) for d in getattr(value, "shape", ()))
            if name in self.seen:
                continue
            declared = self.from_manifest.get(name, (None, -1))[0]
            if not fits(shape, self.from_graph.get(name)) or not fits(shape, declared):
                self.seen[name] = (case, shape)

    def findings(self, ctx: Context) -> Iterator[Finding]:
        for name, (case, shape) in self.seen.items():
            declared, index = self.from_manifest.get(name, (None, -1))
            in_manifest = (
                f"the manifest declares {show(declared)}" if index >= 0 else "the manifest does not declare it"
            )
            where = ctx.where("outputs", index, "shape") if index >= 0 else ctx.where("outputs")
            yield F.error(
                F.GRAPH_IO,
                f"{self.graph}: onnxruntime returned output '{name}' with shape {list(shape)} on case '{case}'; "
                f"the graph declares {show(self.from_graph.get(name))}, {in_manifest}",
                **where,
                output=name,
                returned=list(shape),
                graph_shape=None if self.from_graph.get(name) is None else list(self.from_graph[name] or ()),
                manifest_shape=None if declared is None else list(declared),
            )


def watch(ctx: Context, graph: str, model: Any) -> ShapeWatch:
    """A watch over one graph's outputs; a graph that did not parse here declares no shapes."""
    from_graph = {s.name: s.shape for s in graph_outputs(model)} if model is not None else {}
    from_manifest: dict[str, tuple[Declared, int]] = {}
    for i, output in enumerate(views.outputs(ctx.spec)):
        from_manifest[output.name] = (tuple(output.shape) if output.shape is not None else None, i)
    return ShapeWatch(graph, from_graph, from_manifest)
