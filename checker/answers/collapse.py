"""The quantization collapse: a quantized graph that put values of very different ranges under one scale (box pixels
and 0-1 scores concatenated into one output) leaves the small ones a handful of levels; every score becomes 0 or
1.25 and the boxes under the threshold vanish, while the raw output's cosine stays near 1.

Found from the graphs alone: the answer's output is a DequantizeLinear of a QuantizeLinear whose input the baseline
makes by a Concat; the Concat's inputs are measured in the baseline on the case, and the levels the output's scale
leaves each of them counted. The remedy is measured before it is shown: the variant run again with that output left
in float (its Q/DQ pair taken out), and the answer made again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# A part left this few levels by the output's scale, while another spans ten times its range, has collapsed.
FEW_LEVELS = 32
RANGE_RATIO = 10.0


@dataclass(frozen=True)
class Part:
    name: str
    low: float
    high: float
    levels: float  # (high - low) / scale


@dataclass(frozen=True)
class Collapse:
    output: str
    node: str  # the Concat that joined the parts
    scale: float
    parts: tuple[Part, ...]
    remedy: str | None = None  # what the variant with the output left in float measured

    def words(self) -> str:
        ranges = "; ".join(f"'{p.name}' spans {p.low:.4g} to {p.high:.4g}, {p.levels:.3g} level(s)" for p in self.parts)
        said = (
            f"the quantized graph puts the parts of output '{self.output}' (joined by node '{self.node}') under one "
            f"scale, {self.scale:.4g}: {ranges}"
        )
        return said + (f"; {self.remedy}" if self.remedy else "")


def _producers(graph: Any) -> dict[str, Any]:
    return {out: node for node in graph.node for out in node.output}


def _initial(graph: Any, name: str) -> np.ndarray | None:
    from onnx import numpy_helper

    for tensor in graph.initializer:
        if tensor.name == name:
            return np.asarray(numpy_helper.to_array(tensor))
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            for attr in node.attribute:
                if attr.name == "value":
                    return np.asarray(numpy_helper.to_array(attr.t))
    return None


def quantized_output(variant: Any, output: str) -> tuple[Any, Any, float] | None:
    """The output's DequantizeLinear and QuantizeLinear nodes and its one scale, when the variant quantizes it."""
    made = _producers(variant.graph)
    dq = made.get(output)
    if dq is None or dq.op_type != "DequantizeLinear":
        return None
    q = made.get(dq.input[0])
    scale = _initial(variant.graph, dq.input[1]) if len(dq.input) > 1 else None
    if q is None or q.op_type != "QuantizeLinear" or scale is None or scale.size != 1:
        return None
    return dq, q, float(scale.reshape(-1)[0])


def find(baseline: Any, variant: Any, output: str, inputs: Mapping[str, np.ndarray]) -> Collapse | None:
    """The collapse of `output` on one case's inputs, or None when its parts keep enough levels."""
    found = quantized_output(variant, output)
    concat = _producers(baseline.graph).get(output)
    if found is None or concat is None or concat.op_type != "Concat" or len(concat.input) < 2:
        return None
    _, _, scale = found
    values = _run_exposed(baseline, list(concat.input), inputs)
    parts = tuple(
        Part(name, float(v.min()), float(v.max()), (float(v.max()) - float(v.min())) / scale)
        for name, v in zip(concat.input, values)
        if v.size
    )
    if len(parts) < 2 or scale <= 0:
        return None
    spans = [p.high - p.low for p in parts]
    smallest = min(parts, key=lambda p: p.high - p.low)
    if smallest.levels > FEW_LEVELS or max(spans) < RANGE_RATIO * max(min(spans), 1e-12):
        return None
    return Collapse(output, concat.name or concat.output[0], scale, parts)


def _run_exposed(model: Any, names: list[str], inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    import onnx
    import onnxruntime as ort

    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    known = {o.name for o in exposed.graph.output}
    for name in names:
        if name not in known:
            exposed.graph.output.append(onnx.ValueInfoProto(name=name))
    session = ort.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: inputs[i.name] for i in session.get_inputs() if i.name in inputs}
    return [np.asarray(v) for v in session.run(names, feeds)]


def in_float(variant: Any, output: str) -> Any:
    """The variant with `output` left in float: its QuantizeLinear/DequantizeLinear pair taken out."""
    import onnx

    found = quantized_output(variant, output)
    if found is None:
        return variant
    _, q, _ = found
    joined = q.input[0]  # the float tensor the pair quantized
    fixed = onnx.ModelProto()
    fixed.CopyFrom(variant)
    keep = [n for n in fixed.graph.node if not (output in n.output or q.output[0] in n.output)]
    for node in keep:
        node.output[:] = [output if o == joined else o for o in node.output]
        node.input[:] = [output if i == joined else i for i in node.input]
    del fixed.graph.node[:]
    fixed.graph.node.extend(keep)
    return fixed


def remedy_words(
    variant: Any,
    collapse: Collapse,
    inputs: Mapping[str, np.ndarray],
    judge: Callable[[Mapping[str, np.ndarray]], str],
) -> str:
    """Runs the variant with the output left in float and says what the rule then measures."""
    import onnxruntime as ort

    fixed = in_float(variant, collapse.output)
    session = ort.InferenceSession(fixed.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    feeds = {i.name: inputs[i.name] for i in session.get_inputs() if i.name in inputs}
    outputs = dict(zip(names, session.run(names, feeds)))
    return (
        f"measured with '{collapse.output}' left in float (re-quantize with nodes_to_exclude=['{collapse.node}'], "
        f"or quantize its parts apart): {judge(outputs)}"
    )
