"""A variant's declared transform: complete, and not contradicted by what the graph itself holds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.compare.decisive import TAKES, left_out
from checker.findings import Finding
from checker.manifest.model.variants import Transform

if TYPE_CHECKING:
    import onnx

_QOPERATOR_OPS = {"ConvInteger", "MatMulInteger", "QGemm", "QAttention", "DynamicQuantizeMatMul"}
_QDQ_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
# Weight-only quantization (4-bit blocks, bitsandbytes): packed uint8 weights, no activation quantized.
_WEIGHT_ONLY_OPS = {"MatMulNBits", "MatMulBnb4", "GatherBlockQuantized"}
_INT8, _UINT8 = 3, 2
EXPECTED_QUANT = (
    "QuantizeLinear, DequantizeLinear, QLinear*, MatMulInteger, ConvInteger, DynamicQuantizeLinear or MatMulNBits "
    "nodes with int8 or uint8 initializers"
)
EXPECTED_FP16 = "float16 initializers"
# onnxruntime.quantization.QuantType names -> ONNX TensorProto data types.
_QUANT_TYPES = {
    "QInt8": 3,
    "QUInt8": 2,
    "QInt16": 5,
    "QUInt16": 4,
    "QInt4": 22,
    "QUInt4": 21,
    "QFLOAT8E4M3FN": 17,
}
_FLOAT16 = 10


@dataclass
class GraphFacts:
    """What a graph shows of how it was made: its operators and the types of its quantization parameters."""

    ops: set[str] = field(default_factory=set)
    weight_types: set[int] = field(default_factory=set)  # zero-point types of dequantized weights
    activation_types: set[int] = field(default_factory=set)  # output types of quantized activations
    per_channel: bool = False
    per_tensor: bool = False
    float16: bool = False
    int8_weights: bool = False  # an int8 or uint8 initializer (or Constant node value)
    float16_weights: bool = False  # a float16 initializer (or Constant node value)


def read_facts(model: onnx.ModelProto) -> GraphFacts:
    """Facts from the graph's nodes and tensor headers (no tensor data is read)."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    facts = GraphFacts(ops={n.op_type for n in graph.node})
    stored = {t.data_type for t in graph.initializer} | _constant_types(graph)
    facts.int8_weights = bool(stored & {_INT8, _UINT8})
    facts.float16_weights = _FLOAT16 in stored
    facts.float16 = any(t.data_type == _FLOAT16 for t in inits.values()) or any(
        v.type.tensor_type.elem_type == _FLOAT16 for v in (*graph.input, *graph.output, *graph.value_info)
    )
    for weight in quantized_weights(model):
        facts.weight_types.add(weight.data_type)
        facts.per_channel |= weight.per_channel
        facts.per_tensor |= not weight.per_channel
    held = {**inits, **constant_values(graph)}
    for node in graph.node:
        if node.op_type == "QuantizeLinear" and node.input[0] not in held:
            zero = held.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            facts.activation_types.add(zero.data_type if zero is not None else _QUANT_TYPES["QUInt8"])
    return facts


def _constant_types(graph: onnx.GraphProto) -> set[int]:
    """Data types of the tensors Constant nodes hold: exporters often keep weights there, not in initializers."""
    return {t.data_type for t in constant_values(graph).values()}


def constant_values(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    """The tensor each Constant node gives, by its output's name: a weight an exporter kept in the graph's
    nodes is a weight all the same."""
    out = {}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value" and a.HasField("t"):
                    out[node.output[0]] = a.t
    return out


# Where each quantized operator keeps its weight and the tensor whose length says per channel or per tensor:
# the weight's scale, or for a dynamic operator (whose scale is applied by a Mul after it) its zero point,
# which has one entry per channel too. QDQ keeps the weight behind a DequantizeLinear: (x, x_scale).
WEIGHT_AT = {
    "DequantizeLinear": (0, 1),
    "QLinearConv": (3, 4),
    "QLinearMatMul": (3, 4),
    "QGemm": (3, 4),
    "MatMulInteger": (1, 3),
    "ConvInteger": (1, 3),
    "DynamicQuantizeMatMul": (1, 2),
}
# Operators whose second input is a weight that quantize_static and quantize_dynamic quantize as one.
WEIGHED = {"Conv", "ConvTranspose", "MatMul", "Gemm", "Attention", "LSTM", "GRU", "EmbedLayerNormalization"}


@dataclass(frozen=True)
class QuantizedWeight:
    """A quantized weight as the graph holds it (an initializer or a Constant node's value), and whether its
    scale has one entry per output channel."""

    tensor: onnx.TensorProto
    data_type: int
    per_channel: bool


def quantized_weights(model: onnx.ModelProto) -> list[QuantizedWeight]:
    """Each int8 or uint8 weight, in every format onnxruntime.quantization writes: behind a DequantizeLinear
    that feeds an operator's weight input (QDQ), or in a QLinear*, QGemm, MatMulInteger or ConvInteger
    node's weight input (operator format, dynamic). A quantized constant an Add or Mul takes is an
    activation-typed tensor, not a weight; an int32 bias is not one either. `checker variant add` and the
    `variant.transform` check both read the graph through this one list."""
    graph = model.graph
    held = {**{t.name: t for t in graph.initializer}, **constant_values(graph)}
    weighed = {n.input[1] for n in graph.node if n.op_type in WEIGHED and len(n.input) > 1}
    out = []
    for node in graph.node:
        at = WEIGHT_AT.get(node.op_type)
        if at is None or (node.op_type == "DequantizeLinear" and not set(node.output) & weighed):
            continue
        weight = held.get(node.input[at[0]]) if len(node.input) > at[0] else None
        if weight is None or weight.data_type not in (_INT8, _UINT8):
            continue
        scale = held.get(node.input[at[1]]) if len(node.input) > at[1] and node.input[at[1]] else None
        count = 1
        for d in scale.dims if scale is not None else ():
            count *= d
        out.append(QuantizedWeight(weight, weight.data_type, count > 1))
    return out


def _type_name(value: Any) -> str:
    return str(value).rsplit(".", 1)[-1]


def _declares_quantization(transform: Transform) -> bool:
    return "quantiz" in transform.tool.lower() or "quant_format" in transform.settings


def _declares_float16(transform: Transform) -> bool:
    tool = transform.tool.lower()
    return "float16" in tool or "fp16" in tool


def _quant_ops(facts: GraphFacts) -> set[str]:
    return {o for o in facts.ops if o in _QDQ_OPS | _QOPERATOR_OPS | _WEIGHT_ONLY_OPS or o.startswith("QLinear")}


def missing_traces(transform: Transform, facts: GraphFacts) -> Iterator[str]:
    """Each declared transform that left no trace in the graph: the graph was not transformed as declared."""
    if _declares_quantization(transform):
        ops = _quant_ops(facts)
        if not ops or not facts.int8_weights:
            found = f"it holds {', '.join(sorted(ops))} but no int8 or uint8 initializer" if ops else "it holds none"
            yield f"it declares a quantization, so the graph should hold {EXPECTED_QUANT}; {found}"
    if _declares_float16(transform) and not facts.float16_weights:
        yield f"it declares a float16 conversion, so the graph should hold {EXPECTED_FP16}; it holds none"


def contradictions(transform: Transform, facts: GraphFacts) -> Iterator[str]:
    """Each way the declared transform's settings disagree with the graph."""
    if _quant_ops(facts):
        yield from _format_contradictions(transform.settings, facts)


def _format_contradictions(settings: Mapping[str, Any], facts: GraphFacts) -> Iterator[str]:
    fmt = _type_name(settings.get("quant_format", ""))
    qop = {o for o in facts.ops if o in _QOPERATOR_OPS or o.startswith("QLinear")}
    if fmt == "QDQ" and qop:
        yield f"quant_format is QDQ, but the graph holds operator-format nodes ({', '.join(sorted(qop))})"
    if fmt == "QOperator" and not qop:
        yield "quant_format is QOperator, but the graph holds only QuantizeLinear/DequantizeLinear pairs"
    for key, found in (("weight_type", facts.weight_types), ("activation_type", facts.activation_types)):
        declared = _QUANT_TYPES.get(_type_name(settings.get(key, "")))
        if declared is not None and found and declared not in found:
            kind = key.split("_")[0]
            yield f"{key} is {_type_name(settings[key])}, but the graph's {kind}s are {_names(found)}"
    per_channel = settings.get("per_channel")
    if per_channel is True and facts.per_tensor and not facts.per_channel:
        yield "per_channel is true, but every quantized weight has a single scale"
    if per_channel is False and facts.per_channel:
        yield "per_channel is false, but some quantized weights have one scale per channel"


def _names(types: set[int]) -> str:
    by_type = {v: k for k, v in _QUANT_TYPES.items()}
    return ", ".join(sorted(by_type.get(t, f"type {t}") for t in types))


def transform_findings(
    name: str, transform: Transform, model: onnx.ModelProto | None, where: dict[str, Any]
) -> list[Finding]:
    """variant.transform: an error when the transform left no trace in the graph, a warning when its settings
    are empty or contradict the graph. (That it states its tool, version and settings, the schema requires.)"""
    out = []
    if not transform.settings and (_declares_quantization(transform) or _declares_float16(transform)):
        msg = (
            f"variant '{name}': transform.settings is empty, but {transform.tool} takes settings; record the "
            "ones it ran with (even the defaults) so the transform can be reproduced"
        )
        out.append(F.warning(F.VARIANT_TRANSFORM, msg, **where))
    elif left_out(transform):
        missing = left_out(transform)
        msg = (
            f"variant '{name}': transform.settings leave out {', '.join(missing)}, which decide "
            f"what {transform.tool} makes; without them `checker diagnose --reproduce {name}` cannot re-run it. "
            + "; ".join(f"{key} takes {TAKES[key]}" for key in missing if key in TAKES)
        )
        out.append(F.warning(F.VARIANT_TRANSFORM, msg, **where))
    if model is None:
        return out
    facts = read_facts(model)
    out += [
        F.error(F.VARIANT_TRANSFORM, f"variant '{name}': the transform left no trace in the graph: {text}", **where)
        for text in missing_traces(transform, facts)
    ]
    out += [
        F.warning(F.VARIANT_TRANSFORM, f"variant '{name}': the transform contradicts the graph: {text}", **where)
        for text in contradictions(transform, facts)
    ]
    return out
