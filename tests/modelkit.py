"""Small real models for the comparison tests: a seeded CNN classifier, its quantized variants, contexts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from bundlekit import context_for, put, write_manifest
from onnx import TensorProto, helper, numpy_helper

CLASSES = 10
CHANNELS = (3, 8, 16)


def _init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(array.astype(np.float32), name)


def classifier(seed: int = 0, perturb: str | None = None, spatial: int | str = 16) -> onnx.ModelProto:
    """Conv-Relu-Conv-Relu-GlobalAveragePool-Flatten-Gemm with named nodes; dynamic batch.

    `perturb` names a node whose weights are replaced by noise: the diagnosis must find it.
    """
    rng = np.random.default_rng(seed)
    c0, c1, c2 = CHANNELS
    weights = {
        "w1": rng.normal(0, 0.4, (c1, c0, 3, 3)),
        "b1": rng.normal(0, 0.1, c1),
        "w2": rng.normal(0, 0.25, (c2, c1, 3, 3)),
        "b2": rng.normal(0, 0.1, c2),
        "wf": rng.normal(0, 0.6, (CLASSES, c2)),
        "bf": rng.normal(0, 0.1, CLASSES),
    }
    if perturb is not None:
        key = {"conv1": "w1", "conv2": "w2", "fc": "wf"}[perturb]
        weights[key] = weights[key] + rng.normal(0, 1.0, weights[key].shape) * np.abs(weights[key]).max()
    nodes = [
        helper.make_node("Conv", ["pixels", "w1", "b1"], ["conv1_out"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1_out"], ["relu1_out"], name="relu1"),
        helper.make_node("Conv", ["relu1_out", "w2", "b2"], ["conv2_out"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2_out"], ["relu2_out"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["relu2_out"], ["pool_out"], name="pool"),
        helper.make_node("Flatten", ["pool_out"], ["flat_out"], name="flatten"),
        helper.make_node("Gemm", ["flat_out", "wf", "bf"], ["logits"], name="fc", transB=1),
    ]
    pixels = helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["batch", c0, spatial, spatial])
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", CLASSES])
    graph = helper.make_graph(nodes, "classifier", [pixels], [logits], [_init(k, v) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def images(count: int, seed: int = 1, size: int = 16, scale: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(0, 1, (1, 3, size, size)) * scale).astype(np.float32) for _ in range(count)]


def run(model: onnx.ModelProto | Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs), strict=True))


def quantize(float_path: Path, out_path: Path, calibration: Sequence[np.ndarray], **settings: Any) -> Path:
    """quantize_static in QDQ format, calibrated on `calibration` images."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items: Iterator[np.ndarray] = iter(calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            item = next(self._items, None)
            return None if item is None else {"pixels": item}

    quantize_static(
        str(float_path),
        str(out_path),
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=settings.pop("per_channel", False),
        **settings,
    )
    return out_path


def write_case(root: Path, name: str, inputs: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "inputs": {}, "expected": {}}
    for side, arrays in (("inputs", inputs), ("expected", expected)):
        for key, array in arrays.items():
            entry[side][key] = f"comparison/{name}/{key}.npy"
            put(root / entry[side][key], array)
    return entry


def make_context(
    root: Path,
    manifest: dict[str, Any],
    models: dict[str, onnx.ModelProto],
    cases: list[Any] | None,
    options: Any = None,
) -> Any:
    """A verify Context as the earlier stages leave it: manifest with line marks, graphs and cases loaded."""
    for rel, model in models.items():
        put(root / rel, model)
    write_manifest(root, manifest, "bundle.json")
    ctx = context_for(root, "bundle.json", options)
    ctx.graph = models[manifest["graph"]["path"]]
    ctx.graph_path = root / manifest["graph"]["path"]
    variants = manifest.get("variants") or []
    ctx.variant_models = {v["name"]: models[v["graph"]["path"]] for v in variants}
    ctx.cases = cases
    return ctx


def case(name: str, inputs: dict[str, np.ndarray], expected: dict[str, np.ndarray], index: int = 0) -> Any:
    from checker.context import Case

    return Case(name, [], inputs, expected, {}, ("comparison", "cases", index))


def classifier_cases(model: onnx.ModelProto, count: int = 8, seed: int = 5, sizes: Sequence[int] = ()) -> list[Any]:
    """Cases whose expected outputs are the float model's own (the reference reproduced exactly)."""
    out = []
    for i in range(count):
        size = sizes[i % len(sizes)] if sizes else 16
        x = images(1, seed=seed + i, size=size)[0]
        out.append(case(f"img-{i}", {"pixels": x}, run(model, {"pixels": x}), i))
    return out


QDQ_SETTINGS = {
    "quant_format": "QDQ",
    "per_channel": False,
    "activation_type": "QUInt8",
    "weight_type": "QInt8",
    "calibrate_method": "MinMax",
}


def variant_entry(name: str, path: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "graph": {"path": path},
        "derived_from": "baseline",
        "transform": {
            "tool": "onnxruntime.quantization.quantize_static",
            "version": "1.32.0",
            "settings": dict(QDQ_SETTINGS),
        },
        "rules": rules,
    }
    entry.update(extra)
    return entry


def manifest(
    rules: list[dict[str, Any]], variants: list[dict[str, Any]] | None = None, **runtime: Any
) -> dict[str, Any]:
    return {
        "manifest_version": 1,
        "release": {"name": "classifier", "version": "1.0.0"},
        "graph": {"path": "model.onnx"},
        "runtime": {"name": "onnxruntime", "version": ">=1.17", **runtime},
        "comparison": {"reference": {"description": "the float graph"}, "cases": [], "rules": rules},
        "variants": variants or [],
    }


def write_bundle(
    root: Path,
    models: dict[str, onnx.ModelProto],
    cases: list[Any],
    rules: list[dict[str, Any]],
    variants: list[dict[str, Any]] | None = None,
    runtime: dict[str, Any] | None = None,
) -> Path:
    """A complete bundle on disk (all seven pieces) around the classifier, for whole-command tests."""

    for rel, model in models.items():
        put(root / rel, model)
    put(root / "labels.txt", "".join(f"class-{i}\n" for i in range(CLASSES)))
    entries = [write_case(root, c.name, c.inputs, c.expected) for c in cases]
    entries[0]["tags"] = ["edge"]
    data = {
        "manifest_version": 1,
        "release": {"name": "tiny-classifier", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {
                "name": "pixels",
                "dtype": "float32",
                "shape": ["batch", 3, "height", "width"],
                "meaning": "image",
                "preprocessing": {"kind": "custom", "description": "seeded normal noise, already a tensor"},
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
        "runtime": {"name": "onnxruntime", "version": ">=1.17", **(runtime or {})},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {"reference": {"description": "the float graph on x86_64"}, "cases": entries, "rules": rules},
    }
    if variants:
        data["variants"] = variants
    write_manifest(root, data, "bundle.json")
    return root


def endless_loop(path: Path) -> Path:
    """A graph whose Loop runs 2**62 trips: it runs until it is stopped."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1]),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "go", "x"], ["y"], body=body)],
        "endless",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [
            helper.make_tensor("trips", TensorProto.INT64, [], [2**62]),
            helper.make_tensor("go", TensorProto.BOOL, [], [True]),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


LOOSE_INT8_RULES = [
    {"output": "logits", "check": "topk", "k": 1},
    {"output": "logits", "check": "score_drift", "max": 0.05, "apply": "softmax"},
]


def good_and_miscalibrated_bundle(root: Path) -> Path:
    """A width-dynamic classifier with two int8 variants under loose rules: `int8`, calibrated on its own kind
    of images, and `int8-bad`, calibrated on images 100 times too bright, which fails on every CPU."""
    model = classifier(spatial="width")
    onnx.save(model, str(root / "float.onnx"))
    good = quantize(root / "float.onnx", root / "good.onnx", images(16, seed=9))
    bad = quantize(root / "float.onnx", root / "bad.onnx", images(16, seed=9, scale=100.0))
    rules = LOOSE_INT8_RULES
    variants = [variant_entry("int8", "int8.onnx", rules), variant_entry("int8-bad", "bad.onnx", rules)]
    models = {"model.onnx": model, "int8.onnx": onnx.load(str(good)), "bad.onnx": onnx.load(str(bad))}
    cases = classifier_cases(model, 6, sizes=(16, 20))
    return write_bundle(root / "b", models, cases, [{"output": "logits", "check": "allclose"}], variants)
