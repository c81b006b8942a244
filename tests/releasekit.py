"""Helpers for the release tests: real graphs to start bundles from, and a verify run read as JSON."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from ruamel.yaml import YAML

PYTORCH_CONVERTED = Path(onnx.__file__).parent / "backend" / "test" / "data" / "pytorch-converted"
PLACEHOLDER_PIECES = {
    "preprocessing": "preprocessing",
    "labels": "labels",
    "comparison.reference": "comparison_inputs",
    "comparison.cases": "comparison_inputs",
    "comparison.rules": "comparison_inputs",
    "validation.command": "validation_command",
    "runtime.version": "runtime",
}

Cli = Callable[..., tuple[int, str, str]]


def converted(name: str, dest: Path) -> Path:
    """A copy of one of the ONNX package's pytorch-converted test models, with its test data."""
    shutil.copytree(PYTORCH_CONVERTED / name, dest / name)
    return dest / name


def classifier(labels: list[str] | None = None, producer: str = "torch.onnx") -> onnx.ModelProto:
    """An image classifier: pixels [batch, 3, 8, 8] -> logits [batch, 4], class names in its metadata."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("GlobalAveragePool", ["pixel_values"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"]),
        helper.make_node("Gemm", ["flat", "w"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "classifier",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 4])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.producer_name, model.producer_version = producer, "2.5.1" if producer else ""
    if labels is not None:
        helper.set_model_props(model, {"names": repr(dict(enumerate(labels)))})
    return model


def verify_json(cli: Cli, path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("verify", path, "--format", "json", "--no-progress", *extra)
    assert "Traceback" not in err, err
    return code, json.loads(out)["bundles"][0]


def ids(bundle: dict[str, Any], severity: str | None = None) -> list[str]:
    return [f["id"] for f in bundle["findings"] if severity is None or f["severity"] == severity]


def missing_pieces(bundle: dict[str, Any]) -> list[str]:
    return sorted(f["details"]["piece"] for f in bundle["findings"] if f["id"] == "bundle.missing_piece")


def expected_pieces(placeholders: list[str]) -> list[str]:
    """The missing pieces a list of placeholders should produce, one finding per piece and place."""
    out = []
    for placeholder in placeholders:
        key = placeholder.rpartition(": ")[2] if ": " in placeholder else placeholder
        if key in PLACEHOLDER_PIECES:
            out.append(PLACEHOLDER_PIECES[key])
    # The comparison's three placeholders are one finding about one piece.
    if out.count("comparison_inputs") > 1:
        out = [p for p in out if p != "comparison_inputs"] + ["comparison_inputs"]
    return sorted(out)


def edit(manifest: Path, change: Callable[[Any], None]) -> None:
    """Change the manifest with a round-trip YAML edit, as a person with an editor would."""
    yaml = YAML(typ="rt")
    tree = yaml.load(manifest.read_text(encoding="utf-8"))
    change(tree)
    with manifest.open("w", encoding="utf-8") as handle:
        yaml.dump(tree, handle)


def complete(tree: Any, rules: list[dict[str, Any]], preprocessing: dict[str, Any] | None = None) -> None:
    """Fill in what `checker init` leaves as placeholders (the cases come from `checker case add`)."""
    prep = preprocessing or {"kind": "custom", "description": "a tensor made by the test"}
    for entry in tree["inputs"]:
        entry["preprocessing"] = dict(prep)
    tree["validation"] = {"command": "checker verify bundle.yaml"}
    tree["comparison"]["reference"] = {"description": "the test's own reference"}
    tree["comparison"]["rules"] = rules


MLP_LABELS = [f"class_{i}" for i in range(10)]


def mlp(seed: int = 5) -> onnx.ModelProto:
    """A two-layer classifier, features [batch, 64] -> logits [batch, 10]: MatMuls for the weight-only quantizers
    (4-bit MatMulNBits needs K at least a block), and for dynamic int8."""
    rng = np.random.default_rng(seed)
    weights = {
        "w1": (rng.standard_normal((64, 32)) * 0.3).astype(np.float32),
        "b1": (rng.standard_normal(32) * 0.1).astype(np.float32),
        "w2": (rng.standard_normal((32, 10)) * 0.4).astype(np.float32),
        "b2": (rng.standard_normal(10) * 0.1).astype(np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["features", "w1"], ["h0"], "fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], "fc1_bias"),
        helper.make_node("Relu", ["h1"], ["h2"], "relu"),
        helper.make_node("MatMul", ["h2", "w2"], ["l0"], "fc2"),
        helper.make_node("Add", ["l0", "b2"], ["logits"], "fc2_bias"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.producer_name, model.producer_version = "onnx.helper", onnx.__version__
    return model


def mlp_forward(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """The classifier's reference, in NumPy float64."""
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    hidden = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0)
    return (hidden @ w["w2"] + w["b2"]).astype(np.float32)


def mlp_bundle(root: Path, cases: int = 6) -> Path:
    """A complete, passing bundle of the classifier: its cases from NumPy, two of them tagged edge."""
    model = mlp()
    root.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(root / "model.onnx"))
    (root / "labels.txt").write_text("\n".join(MLP_LABELS) + "\n", encoding="utf-8")
    rng = np.random.default_rng(11)
    entries = []
    for i in range(cases):
        x = rng.standard_normal((2, 64)).astype(np.float32)
        (root / "cases" / f"c{i}").mkdir(parents=True)
        np.save(root / "cases" / f"c{i}" / "features.npy", x)
        np.save(root / "cases" / f"c{i}" / "logits.npy", mlp_forward(model, x))
        entries.append(
            {
                "name": f"c{i}",
                "tags": ["edge"] if i < 2 else ["ordinary"],
                "inputs": {"features": f"cases/c{i}/features.npy"},
                "expected": {"logits": f"cases/c{i}/logits.npy"},
            }
        )
    data = {
        "manifest_version": 1,
        "release": {"name": "mlp", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {
                "name": "features",
                "dtype": "float32",
                "shape": ["batch", 64],
                "meaning": "tensor",
                "preprocessing": {"kind": "custom", "description": "the application's feature vector"},
            }
        ],
        "outputs": [
            {"name": "logits", "dtype": "float32", "shape": ["batch", 10], "meaning": "logits",
             "labels": {"path": "labels.txt", "axis": -1}}
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17,<2"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "NumPy float64"},
            "cases": entries,
            "rules": [{"output": "logits", "check": "allclose", "atol": 1e-4, "rtol": 1e-3}],
        },
    }  # fmt: skip
    (root / "bundle.yaml").write_text(yaml_text(data), encoding="utf-8")
    return root


def yaml_text(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)
