"""`checker diagnose PATH --reproduce VARIANT`: re-run the recorded transform and compare it with the shipped graph.

The variant's `transform` (an onnxruntime.quantization function, its settings, and the calibration cases by
name or count) is run again on the baseline graph. The result and the shipped variant are compared tensor by
tensor: every weight, scale and zero point must be equal; otherwise the first one that differs, in the
shipped graph's order, is named with its difference. Then the nodes, so a change in what was quantized shows
even when the tensors kept their values.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from checker.compare.quantizing import calibration_cases, calibration_reader, quant_kwargs, quantizer
from checker.compare.requantize import Recorded
from checker.context import Context
from checker.errors import BundleError
from checker.manifest.model.variants import Variant


@dataclass
class Reproduced(Recorded):
    compared: int = 0
    difference: dict[str, Any] | None = None  # the first differing tensor or node; None: equal
    summary: str = ""

    @property
    def equal(self) -> bool:
        return self.difference is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "reproduced": self.equal,
            **self.recorded_dict(),
            "tensors_compared": self.compared,
            **({"difference": self.difference} if self.difference is not None else {}),
            "summary": self.summary,
        }


def kind(name: str) -> str:
    """What a tensor of onnxruntime.quantization's output is, by the names it gives them."""
    if name.endswith("_zero_point"):
        return "zero point"
    if name.endswith("_scale"):
        return "scale"
    return "weight"


@dataclass
class _Tensors:
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # in graph order
    nodes: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)


def _read(path: Path) -> _Tensors:
    import onnx
    from onnx import numpy_helper

    try:
        model = onnx.load(str(path))  # external data from beside the file: both graphs are inside folders we own
    except Exception as exc:  # protobuf's decode errors share no narrower base
        raise BundleError(f"'{path.name}' cannot be read: {exc}") from exc
    out = _Tensors()
    for tensor in model.graph.initializer:
        out.arrays[tensor.name] = numpy_helper.to_array(tensor)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output:
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            if value is not None:
                out.arrays[node.output[0]] = numpy_helper.to_array(value)
        out.nodes.append((node.op_type, tuple(node.input), tuple(node.output)))
    return out


def _describe(a: np.ndarray, b: np.ndarray) -> dict[str, Any] | None:
    """How b differs from a, or None when they are equal (dtype, shape and every element)."""
    if a.dtype != b.dtype:
        return {"shipped": str(a.dtype), "reproduced": str(b.dtype), "text": f"dtype {a.dtype} against {b.dtype}"}
    if a.shape != b.shape:
        return {
            "shipped": list(a.shape),
            "reproduced": list(b.shape),
            "text": f"shape {list(a.shape)} against {list(b.shape)}",
        }
    if np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
        return None
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    where = int(np.argmax(diff))
    count = int(np.count_nonzero(a != b))
    index = [int(i) for i in np.unravel_index(where, a.shape)] if a.ndim else []
    return {
        "differing_elements": count,
        "elements": int(a.size),
        "max_abs_difference": float(diff.reshape(-1)[where]),
        "at": index,
        "shipped_value": float(a.reshape(-1)[where]),
        "reproduced_value": float(b.reshape(-1)[where]),
        "text": f"{count} of {a.size} element(s) differ, by up to {float(diff.reshape(-1)[where]):.6g} "
        f"(at {index}: {float(a.reshape(-1)[where]):.6g} shipped, {float(b.reshape(-1)[where]):.6g} re-run)",
    }


def first_difference(shipped: _Tensors, rerun: _Tensors) -> tuple[int, dict[str, Any] | None]:
    """How many tensors were compared, and the first that differs (then the first differing node)."""
    compared = 0
    for name, array in shipped.arrays.items():
        other = rerun.arrays.get(name)
        if other is None:
            return compared, {"tensor": name, "kind": kind(name), "text": "the re-run has no such tensor"}
        compared += 1
        found = _describe(array, other)
        if found is not None:
            return compared, {"tensor": name, "kind": kind(name), **found}
    extra = [n for n in rerun.arrays if n not in shipped.arrays]
    if extra:
        return compared, {"tensor": extra[0], "kind": kind(extra[0]), "text": "the shipped variant has no such tensor"}
    for i, (a, b) in enumerate(zip(shipped.nodes, rerun.nodes)):
        if a != b:
            return compared, {"node": i, "text": f"node {i} is {a[0]}{list(a[1])} shipped, {b[0]}{list(b[1])} re-run"}
    if len(shipped.nodes) != len(rerun.nodes):
        return compared, {"text": f"{len(shipped.nodes)} nodes shipped, {len(rerun.nodes)} re-run"}
    return compared, None


def reproduce(ctx: Context, entry: Variant, baseline: Path, variant: Path) -> Reproduced:
    """Run the variant's recorded transform on the baseline and compare the result with the shipped graph."""
    import onnxruntime

    transform = entry.transform
    function = quantizer(transform.tool)
    settings = dict(transform.settings)
    kwargs, ignored = quant_kwargs(function, settings)
    calibration = calibration_cases(ctx.loaded_cases, settings.get("calibration_cases"))
    result = Reproduced(
        transform.tool, transform.version, onnxruntime.__version__, settings, ignored, [c.name for c in calibration]
    )
    with tempfile.TemporaryDirectory(prefix="checker-reproduce-") as work:
        out = Path(work) / "reproduced.onnx"
        reader = {"calibration_data_reader": calibration_reader(calibration)} if "static" in function.__name__ else {}
        try:
            function(str(baseline), str(out), **reader, **kwargs)
        except Exception as exc:  # onnxruntime.quantization raises bare exceptions of many kinds
            raise BundleError(f"{function.__name__} failed on the recorded settings: {exc}") from exc
        result.compared, result.difference = first_difference(_read(variant), _read(out))
    result.summary = _summary(result, entry.name)
    return result


def _summary(result: Reproduced, name: str) -> str:
    head = (
        f"re-ran {result.tool.rsplit('.', 1)[-1]} {result.used_version} with the recorded settings on "
        f"{len(result.calibration)} calibration case(s)"
    )
    if result.recorded_version != result.used_version:
        head += f" (the variant records {result.recorded_version})"
    if result.ignored:
        head += f"; settings {', '.join(result.ignored)} are not parameters of {result.tool.rsplit('.', 1)[-1]}"
    if result.difference is None:
        return f"{head}: the result equals variant '{name}' ({result.compared} tensors: weights, scales, zero points)"
    diff = result.difference
    what = f"{diff['kind']} '{diff['tensor']}'" if "tensor" in diff else "the graph's nodes"
    return f"{head}: the result differs from variant '{name}' first at {what}: {diff['text']}"


def reproduce_bundle(path: Path, name: str) -> Reproduced:
    """Open the bundle as verify does and reproduce variant `name` from the baseline."""
    from checker.diagnose.investigate import prepared, variant_entry

    with prepared(path) as ctx:
        entry, variant = variant_entry(ctx, name)
        if ctx.graph_path is None:
            raise BundleError("the baseline graph is not usable")
        return reproduce(ctx, entry, ctx.graph_path, variant)
