"""What a variant's graph shows of the transform that made it: the tool, and each setting it leaves a trace of.

Read from the nodes, their attributes and the quantized weights: QDQ or operator-format int8, static (activations
quantized with fixed scales) or dynamic, per-channel scales, 7-bit weights (`reduce_range`), the activation and
weight types, a float16 conversion (and whether it kept float32 inputs and outputs), 4-bit `MatMulNBits` with its
bits, block size, symmetry and accuracy level. What a graph cannot show (how `quantize_static` calibrated) is
the tool's default, said to be one. The values of quantized weights are read only from the graph file itself:
weights in external data leave `reduce_range` unshown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checker.compare.transform import quantized_weights, read_facts

if TYPE_CHECKING:
    import numpy as np
    import onnx

QUANTIZE = "onnxruntime.quantization"
STATIC = f"{QUANTIZE}.quantize_static"
DYNAMIC = f"{QUANTIZE}.quantize_dynamic"
NBITS = f"{QUANTIZE}.matmul_nbits_quantizer.MatMulNBitsQuantizer"
FLOAT16 = "onnxruntime.transformers.float16.convert_float_to_float16"
# Bare names a user may give for --transform, and the tool each means.
SHORT_NAMES = {
    "quantize_static": STATIC,
    "quantize_dynamic": DYNAMIC,
    "MatMulNBitsQuantizer": NBITS,
    "convert_float_to_float16": FLOAT16,
}
# Settings no graph shows, and the value the tool takes when it is not given.
UNSHOWN_DEFAULTS = {STATIC: {"calibrate_method": "MinMax"}}
_TYPE_NAMES = {3: "QInt8", 2: "QUInt8", 5: "QInt16", 4: "QUInt16", 22: "QInt4", 21: "QUInt4"}
_INT8, _UINT8, _FLOAT, _FLOAT16 = 3, 2, 1, 10
FLAGS = ("per_channel", "reduce_range", "keep_io_types")  # settings a graph shows when true (recorded only then)
_DYNAMIC_OPS = {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "DynamicQuantizeMatMul"}
_OPERATOR_OPS = {"QLinearConv", "QLinearMatMul", "QGemm", "QAttention", *_DYNAMIC_OPS - {"DynamicQuantizeLinear"}}


@dataclass
class Shown:
    """The transform a graph shows: its tool (None when it shows none), its settings, and words for both."""

    tool: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    words: str = "no transform: neither quantized nor float16 weights"
    also: list[str] = field(default_factory=list)  # further traces, beside the tool's own


@dataclass
class _Weight:
    values: np.ndarray | None  # None when the tensor's data is external
    data_type: int
    per_channel: bool


def expand(tool: str) -> str:
    """A tool as the manifest records it: a bare function name of a known tool gets its module."""
    return SHORT_NAMES.get(tool, tool)


def shown_transform(model: onnx.ModelProto) -> Shown:
    ops = {n.op_type for n in model.graph.node}
    facts = read_facts(model)
    nbits = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    if nbits:
        shown = _nbits(nbits)
        if facts.float16_weights:
            shown.also.append("float16 weights beside the 4-bit ones: converted to float16 too")
        return shown
    weights = list(_weights(model))
    if weights:
        return _int8(model, ops, weights, facts.activation_types)
    if facts.float16_weights:
        return _float16(model)
    return Shown()


def _nbits(nodes: list[onnx.NodeProto]) -> Shown:
    from onnx import helper

    def attribute(node: onnx.NodeProto, name: str) -> Any:
        return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), None)

    bits = Counter(attribute(n, "bits") for n in nodes)
    blocks = Counter(attribute(n, "block_size") for n in nodes)
    levels = Counter(attribute(n, "accuracy_level") for n in nodes)
    symmetric = Counter(len(n.input) < 4 or not n.input[3] for n in nodes)  # no zero points: symmetric
    settings: dict[str, Any] = {}
    for key, counts in (("bits", bits), ("block_size", blocks)):
        value = counts.most_common(1)[0][0]
        if value is not None:
            settings[key] = int(value)
    settings["is_symmetric"] = symmetric.most_common(1)[0][0]
    level = levels.most_common(1)[0][0]
    if level is not None:
        settings["accuracy_level"] = int(level)
    words = f"{settings.get('bits', 4)}-bit MatMulNBits weights in blocks of {settings.get('block_size', '?')}"
    shown = Shown(NBITS, settings, f"{words} ({len(nodes)} MatMul nodes)")
    if len(blocks) > 1 or len(bits) > 1:
        shown.also.append(f"MatMulNBits nodes of several kinds: bits {dict(bits)}, block sizes {dict(blocks)}")
    return shown


def _weights(model: onnx.ModelProto) -> Iterator[_Weight]:
    """Each quantized weight (compare.transform reads them, for the variant.transform check too), with its
    values where the graph file holds them."""
    for weight in quantized_weights(model):
        yield _Weight(_values(weight.tensor), weight.data_type, weight.per_channel)


def _values(tensor: onnx.TensorProto) -> np.ndarray | None:
    from onnx import TensorProto, numpy_helper

    if tensor.data_location == TensorProto.EXTERNAL:
        return None
    return numpy_helper.to_array(tensor)


def _int8(model: onnx.ModelProto, ops: set[str], weights: list[_Weight], activations: set[int]) -> Shown:
    dynamic = bool(ops & _DYNAMIC_OPS) and not activations
    operator = bool(ops & _OPERATOR_OPS) or any(o.startswith("QLinear") for o in ops)
    settings: dict[str, Any] = {}
    if not dynamic:
        settings["quant_format"] = "QOperator" if operator else "QDQ"
    per_channel = any(w.per_channel for w in weights)
    if per_channel:
        settings["per_channel"] = True
    if _reduced(weights):
        settings["reduce_range"] = True
    if not dynamic and len(activations) == 1:
        settings["activation_type"] = _TYPE_NAMES.get(next(iter(activations)), "?")
    types = {w.data_type for w in weights}
    if len(types) == 1:
        settings["weight_type"] = _TYPE_NAMES[next(iter(types))]
    kind = "dynamic (activations quantized as they run)" if dynamic else "static (activations with fixed scales)"
    form = "operator-format" if operator else "QDQ"
    scales = "one scale per channel" if per_channel else "one scale per weight"
    words = f"{form} int8, {kind}, {scales}"
    also = (
        ["its weights are in external data, which is not read: reduce_range is not shown"]
        if any(w.values is None for w in weights)
        else []
    )
    return Shown(DYNAMIC if dynamic else STATIC, settings, words, also)


def _reduced(weights: list[_Weight]) -> bool:
    """7-bit weights: quantize_weight's range with reduce_range is [-64, 64] for int8 and [0, 127] for uint8;
    with the full range, the largest weight of every tensor (or channel) reaches 127 or 255."""
    spans = [_span(w.values, w.data_type) for w in weights if w.values is not None and w.values.size]
    spans = [s for s in spans if s > 0]  # a tensor of one value shows nothing of the range
    return bool(spans) and all(s <= 64 for s in spans)


def _span(values: np.ndarray, data_type: int) -> int:
    """int8 (symmetric): the largest magnitude; uint8: half the spread, so that both compare with 64."""
    wide = values.astype("int16")
    if data_type == _INT8:
        return int(abs(wide).max())
    return (int(wide.max()) - int(wide.min()) + 1) // 2


def _float16(model: onnx.ModelProto) -> Shown:
    graph = model.graph
    io = [v.type.tensor_type.elem_type for v in (*graph.input, *graph.output)]
    kept = bool(io) and _FLOAT16 not in io and _FLOAT in io
    settings = {"keep_io_types": True} if kept else {}
    words = "float16 weights" + (", float32 inputs and outputs kept" if kept else "")
    return Shown(FLOAT16, settings, words)


def _same(stated: Any, shown: Any) -> bool:
    """Settings equal as recorded: an enum member's name stands for the member (QuantType.QInt8 is QInt8)."""
    if isinstance(stated, str) and isinstance(shown, str):
        return stated.rsplit(".", 1)[-1] == shown.rsplit(".", 1)[-1]
    return bool(stated == shown)


def _said(value: Any) -> str:
    """A setting as the manifest writes it (true, not True)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def contradictions(tool: str, stated: Mapping[str, Any], shown: Shown) -> list[str]:
    """Each way what the user states disagrees with what the graph shows (what is stated is recorded)."""
    out = []
    if shown.tool is not None and tool != shown.tool:
        out.append(f"the transform is stated to be {tool}, but the graph shows {shown.words} ({shown.tool})")
    elif shown.tool is None and tool in SHORT_NAMES.values():
        out.append(f"the transform is stated to be {tool}, but the graph shows {shown.words}")
    for key, value in stated.items():
        if key in shown.settings and not _same(value, shown.settings[key]):
            out.append(f"{key} is stated as {_said(value)}, but the graph shows {_said(shown.settings[key])}")
        elif key in FLAGS and value is True and key not in shown.settings and tool == shown.tool:
            out.append(f"{key} is stated as true, but the graph shows no trace of it")
    return out
