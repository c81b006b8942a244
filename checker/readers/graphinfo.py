"""Reading what a graph declares: its inputs and outputs, external-data references, opsets."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

DTYPE_NAMES = {
    "FLOAT": "float32",
    "DOUBLE": "float64",
    "FLOAT16": "float16",
    "BFLOAT16": "bfloat16",
}

Dim = int | str | None  # a static size, a named dynamic dim, or an unnamed dynamic dim


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str  # manifest spelling ("float32"), or "sequence"/"map"/"optional" for non-tensors
    shape: tuple[Dim, ...] | None  # None when the graph gives no shape


@dataclass(frozen=True)
class ExternalRef:
    tensor: str
    location: str
    offset: int
    length: int | None
    nbytes: int | None  # what the tensor's dims and type need


def dtype_name(elem_type: int) -> str:
    import onnx

    try:
        raw: str = onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:  # a type this onnx does not know (newer, or made up): named by its number
        return f"type {elem_type}"
    return DTYPE_NAMES.get(raw, raw.lower())


def _spec(value: Any) -> TensorSpec:
    kind = value.type.WhichOneof("value")
    if kind != "tensor_type":
        return TensorSpec(value.name, {"sequence_type": "sequence", "map_type": "map"}.get(kind, str(kind)), None)
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return TensorSpec(value.name, dtype_name(tensor.elem_type), None)
    dims: list[Dim] = []
    for dim in tensor.shape.dim:
        if dim.HasField("dim_value") and dim.dim_value >= 0:
            dims.append(int(dim.dim_value))
        else:
            dims.append(dim.dim_param or None)
    return TensorSpec(value.name, dtype_name(tensor.elem_type), tuple(dims))


def graph_inputs(model: Any) -> list[TensorSpec]:
    """The graph's real inputs: initializers that are also listed as inputs are excluded."""
    initializers = {t.name for t in model.graph.initializer}
    return [_spec(v) for v in model.graph.input if v.name not in initializers]


def graph_outputs(model: Any) -> list[TensorSpec]:
    return [_spec(v) for v in model.graph.output]


def _all_tensors(graph: Any) -> Iterator[Any]:
    """Every TensorProto stored in a graph, its subgraphs and its attributes."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    yield from _node_tensors(graph.node)


def _node_tensors(nodes: Any) -> Iterator[Any]:
    for node in nodes:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            sparse = [attr.sparse_tensor] if attr.HasField("sparse_tensor") else []
            for s in [*sparse, *attr.sparse_tensors]:
                yield s.values
                yield s.indices
            if attr.HasField("g"):
                yield from _all_tensors(attr.g)
            for sub in attr.graphs:
                yield from _all_tensors(sub)


def _model_tensors(model: Any) -> Iterator[Any]:
    """The graph's tensors, and those in its functions and training graphs: onnxruntime loads those too."""
    yield from _all_tensors(model.graph)
    for function in model.functions:
        yield from _node_tensors(function.node)
    for info in model.training_info:
        yield from _all_tensors(info.initialization)
        yield from _all_tensors(info.algorithm)


def _nbytes(tensor: Any) -> int | None:
    import numpy as np
    import onnx

    try:
        itemsize = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    count = math.prod(int(d) for d in tensor.dims)  # Python integers: dims of 2**62 must not wrap around
    if tensor.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4):
        return (count + 1) // 2
    return count * itemsize


def external_refs(model: Any) -> Iterator[ExternalRef | str]:
    """Each tensor stored outside the graph file; a str describes a malformed reference."""
    import onnx

    for tensor in _model_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = {e.key: e.value for e in tensor.external_data}
        try:
            offset = int(entries.get("offset", "0"))
            length = int(entries["length"]) if "length" in entries else None
        except ValueError:
            yield f"tensor '{tensor.name}' has a non-numeric offset or length"
            continue
        if "location" not in entries or offset < 0 or (length is not None and length < 0):
            yield f"tensor '{tensor.name}' has no location or a negative offset/length"
            continue
        yield ExternalRef(tensor.name, entries["location"], offset, length, _nbytes(tensor))


def opsets(model: Any) -> dict[str, int]:
    """Domain -> opset version; the default domain is reported as 'ai.onnx'."""
    return {(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import}


# Ops that pass a tensor on unchanged in value before it is scaled (skl2onnx casts a double input first).
_PASS_THROUGH = ("Cast", "Identity", "Reshape", "Flatten")


def scaled_inputs(model: Any) -> dict[str, str]:
    """Graph inputs that the graph scales itself, each with what does it: an `ai.onnx.ml` Scaler node, or a
    Sub or Div by a constant (an exported StandardScaler), reached directly or through a cast or reshape.
    A tabular input's declared `standard` on such an input applies the scaler a second time."""
    constants = {t.name for t in model.graph.initializer}
    constants.update(o for n in model.graph.node if n.op_type == "Constant" for o in n.output)
    consumers: dict[str, list[Any]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    out: dict[str, str] = {}
    for spec in graph_inputs(model):
        found = _scaler_after(spec.name, consumers, constants, depth=0)
        if found is not None:
            out[spec.name] = found
    return out


def _scaler_after(name: str, consumers: dict[str, list[Any]], constants: set[str], depth: int) -> str | None:
    for node in consumers.get(name, []):
        if node.op_type == "Scaler" and node.domain == "ai.onnx.ml":
            return f"the ai.onnx.ml Scaler node '{node.name or node.output[0]}'"
        by_constant = len(node.input) == 2 and node.input[0] == name and node.input[1] in constants
        if node.op_type in ("Sub", "Div") and by_constant:
            return f"the {node.op_type} by a constant '{node.name or node.output[0]}'"
        if node.op_type in _PASS_THROUGH and depth < 4:
            found = _scaler_after(node.output[0], consumers, constants, depth + 1)
            if found is not None:
                return found
    return None
