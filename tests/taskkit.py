"""A labelled bundle for the task rules: a small real classifier, cases with labels, and an int8 variant whose
weights send every case tagged `edge` to class 0 by construction (a margin no int8 kernel can close)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from bundlekit import put, write_manifest
from modelkit import QDQ_SETTINGS
from onnx import TensorProto, helper, numpy_helper

CLASSES = 4
FEATURES = CLASSES + 1  # one feature per class, and the edge marker
EDGE_PULL = 3.0  # the variant's weight from the edge marker to class 0: 12 against a class's 3


def linear_classifier(edge_pull: float = 0.0) -> onnx.ModelProto:
    """logits = x @ W: feature c votes for class c; with `edge_pull`, the edge marker votes for class 0."""
    w = np.zeros((FEATURES, CLASSES), np.float32)
    w[np.arange(CLASSES), np.arange(CLASSES)] = 1.0
    w[CLASSES, 0] = edge_pull
    node = helper.make_node("MatMul", ["x", "w"], ["logits"], name="fc")
    graph = helper.make_graph(
        [node],
        "linear-classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", CLASSES])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def sample(label: int, edge: bool, rng: np.random.Generator) -> np.ndarray:
    """One item of class `label`: its feature at 3, noise of 0.1 elsewhere; an edge item carries the marker."""
    x = rng.normal(0.0, 0.1, (1, FEATURES)).astype(np.float32)
    x[0, label] = 3.0
    x[0, CLASSES] = 4.0 if edge else 0.0
    return x


def quantized(model: onnx.ModelProto, folder: Path, calibration: Sequence[np.ndarray]) -> onnx.ModelProto:
    """The model through onnxruntime's quantize_static (QDQ, int8 weights)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.items = iter(calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            item = next(self.items, None)
            return None if item is None else {"x": item}

    src, out = folder / "float.onnx", folder / "int8.onnx"
    onnx.save(model, str(src))
    quantize_static(
        str(src), str(out), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8, per_channel=False,
    )  # fmt: skip
    return onnx.load(str(out))


def labelled_bundle(
    root: Path, count: int, edges: int, variant_rules: list[dict[str, Any]], rules: list[dict[str, Any]] | None = None
) -> Path:
    """`count` labelled cases, the last `edges` of them tagged edge (their labels never class 0), the float
    baseline and an int8 variant of the edge-pulling weights."""
    from modelkit import run

    rng = np.random.default_rng(7)
    baseline = linear_classifier()
    entries = []
    calibration = []
    for i in range(count):
        edge = i >= count - edges
        label = 1 + i % (CLASSES - 1) if edge else i % CLASSES
        x = sample(label, edge, rng)
        calibration.append(x)
        put(root / f"cases/x{i}.npy", x)
        put(root / f"cases/y{i}.npy", run(baseline, {"x": x})["logits"])
        entries.append(
            {
                "name": f"c{i:03d}",
                "tags": ["edge"] if edge else ["plain"],
                "inputs": {"x": f"cases/x{i}.npy"},
                "expected": {"logits": f"cases/y{i}.npy"},
                "label": f"class-{label}",
            }
        )
    put(root / "model.onnx", baseline)
    put(root / "model.int8.onnx", quantized(linear_classifier(EDGE_PULL), root.parent, calibration[:16]))
    put(root / "labels.txt", "".join(f"class-{i}\n" for i in range(CLASSES)))
    data = {
        "manifest_version": 1,
        "release": {"name": "labelled", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {
                "name": "x",
                "dtype": "float32",
                "shape": ["batch", FEATURES],
                "meaning": "tabular",
                "preprocessing": {"kind": "custom", "description": "class votes and an edge marker"},
            }
        ],
        "outputs": [
            {
                "name": "logits",
                "dtype": "float32",
                "shape": ["batch", CLASSES],
                "meaning": "logits",
                "labels": {"path": "labels.txt"},
            }
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "the float graph"},
            "cases": entries,
            "rules": rules or [{"output": "logits", "check": "accuracy", "min": 0.9}],
        },
        "variants": [
            {
                "name": "int8",
                "graph": {"path": "model.int8.onnx"},
                "derived_from": "baseline",
                "transform": {
                    "tool": "onnxruntime.quantization.quantize_static",
                    "version": "1.32.0",
                    "settings": dict(QDQ_SETTINGS),
                },
                "rules": [{"output": "logits", "check": "topk", "k": 1, "min_pass_rate": 0.0}],
                "drift_rules": variant_rules,
            }
        ],
    }
    write_manifest(root, data)
    return root
