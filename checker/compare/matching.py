"""Matching the baseline's tensors with a variant's across a rewrite such as onnxruntime's QDQ quantization.

The QDQ quantizer keeps tensor names: the baseline's `X` becomes `X` -> QuantizeLinear -> DequantizeLinear ->
`X_DequantizeLinear_Output` (or `_1` when taken), and a graph output keeps its name after the DequantizeLinear. It
also fuses nodes (Conv+Relu becomes one Conv), so some baseline tensors have no counterpart; the nodes that made
them belong to the region of the next matched tensor, and excluding that region keeps the tensor in float.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

POST_QDQ = ("_DequantizeLinear_Output", "_DequantizeLinear_Output_1")
GRAPH_INPUT = "(graph input)"


@dataclass(frozen=True)
class Produced:
    """A baseline tensor, its counterpart in the variant, and the baseline nodes that make it."""

    tensor: str
    variant_tensor: str
    node: str  # the producing baseline node's name; "" for a graph input or an unnamed node
    op_type: str
    order: int  # topological position in the baseline (-1 for a graph input)
    inputs: tuple[str, ...]  # the matched tensors (or graph inputs) its region starts from
    exclude: tuple[str, ...]  # baseline node names that keep it in float when left unquantized


@dataclass
class _Graph:
    producer: dict[str, tuple[int, onnx.NodeProto]]
    consumers: dict[str, list[str]]
    initializers: set[str]
    inputs: list[str]


def _index(model: onnx.ModelProto) -> _Graph:
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    producer: dict[str, tuple[int, onnx.NodeProto]] = {}
    consumers: dict[str, list[str]] = {}
    for order, node in enumerate(graph.node):
        for out in node.output:
            if out:
                producer[out] = (order, node)
        for name in node.input:
            consumers.setdefault(name, []).append(node.name)
    inputs = [i.name for i in graph.input if i.name not in inits]
    return _Graph(producer, consumers, inits, inputs)


def _twins(base: _Graph, variant: onnx.ModelProto) -> dict[str, str]:
    """Baseline tensor -> variant tensor. A graph input counts only when the variant quantizes it."""
    have = {o for n in variant.graph.node for o in n.output if o}
    twins = {}
    for name in base.inputs:
        twin = next((name + s for s in POST_QDQ if name + s in have), None)
        if twin is not None:
            twins[name] = twin
    for name in base.producer:
        twin = next((name + s for s in POST_QDQ if name + s in have), name if name in have else None)
        if twin is not None:
            twins[name] = twin
    return twins


def _region(base: _Graph, node: onnx.NodeProto, twins: dict[str, str]) -> tuple[list[int], set[str]]:
    """The node and the unmatched producers behind it (by order), and the tensors where that region starts."""
    orders, starts, seen = [], set(), set()
    stack = [node]
    while stack:
        current = stack.pop()
        orders.append(base.producer[next(o for o in current.output if o)][0])
        for name in current.input:
            if not name or name in base.initializers or name in seen:
                continue
            seen.add(name)
            if name in twins or name not in base.producer:
                starts.add(name)
            else:
                stack.append(base.producer[name][1])
    return sorted(set(orders)), starts


def match_tensors(baseline: onnx.ModelProto, variant: onnx.ModelProto) -> tuple[list[Produced], list[str]]:
    """Every matched tensor in topological order, and the baseline tensors without a counterpart."""
    base = _index(baseline)
    twins = _twins(base, variant)
    nodes = list(baseline.graph.node)
    matched = [
        Produced(n, twins[n], "", GRAPH_INPUT, -1, (), tuple(c for c in base.consumers.get(n, []) if c))
        for n in base.inputs
        if n in twins
    ]
    for name, (order, node) in sorted(base.producer.items(), key=lambda kv: kv[1][0]):
        if name in twins:
            orders, starts = _region(base, node, twins)
            exclude = tuple(dict.fromkeys(nodes[o].name for o in orders if nodes[o].name))
            matched.append(Produced(name, twins[name], node.name, node.op_type, order, tuple(sorted(starts)), exclude))
    unmatched = [n for n in base.producer if n not in twins]
    return matched, unmatched
