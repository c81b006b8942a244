"""A declared transform must show in the graph: a real quantization that quantized nothing fails the bundle."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from bundlekit import manifest, write_bundle
from onnx import TensorProto, helper, numpy_helper

from checker import findings as F
from checker.compare.transform import read_facts, transform_findings
from checker.context import Options
from checker.manifest.model.build import build
from checker.manifest.model.variants import Transform
from checker.verify import verify_bundle

DYNAMIC = "onnxruntime.quantization.quantize_dynamic"


def transform(tool: str, settings: dict[str, object]) -> Transform:
    return build(Transform, {"tool": tool, "version": "1", "settings": settings})


def constant_weight_model() -> onnx.ModelProto:
    """y = x @ W + b with W and b held in Constant nodes, as some exporters write them."""
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["W"], value=numpy_helper.from_array(w, "W")),
        helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(b, "b")),
        helper.make_node("MatMul", ["x", "W"], ["xw"], name="mm"),
        helper.make_node("Add", ["xw", "b"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def quantize_dynamic(src: Path, dest: Path) -> Path:
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as run

    run(str(src), str(dest), weight_type=QuantType.QInt8)
    return dest


def bundle_with_variant(root: Path, model: onnx.ModelProto, settings: dict[str, object]) -> Path:
    import onnxruntime
    from bundlekit import linear_model

    root = write_bundle(root, linear_model(), manifest())  # the same weights: the cases hold for `model` too
    onnx.save(model, str(root / "model.onnx"))
    quantize_dynamic(root / "model.onnx", root / "model.int8.onnx")
    import yaml

    data = yaml.safe_load((root / "bundle.yaml").read_text())
    data["variants"] = [
        {
            "name": "int8",
            "graph": {"path": "model.int8.onnx"},
            "derived_from": "baseline",
            "transform": {"tool": DYNAMIC, "version": onnxruntime.__version__, "settings": settings},
            "rules": [{"output": "y", "check": "max_abs", "max": 0.5}],
        }
    ]
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def test_a_quantization_that_quantized_nothing_fails(tmp_path: Path) -> None:
    root = bundle_with_variant(tmp_path / "b", constant_weight_model(), {"weight_type": "QInt8"})
    facts = read_facts(onnx.load(str(root / "model.int8.onnx")))
    assert not facts.int8_weights  # quantize_dynamic really skipped the Constant-held weights
    report = verify_bundle(root, Options())
    found = [f for f in report.findings if f.id == F.VARIANT_TRANSFORM]
    assert [f.severity for f in found] == [F.Severity.ERROR], found
    assert "DynamicQuantizeLinear" in found[0].message and "int8 or uint8 initializers" in found[0].message
    assert (
        found[0].line is not None and "transform:" in (root / "bundle.yaml").read_text().splitlines()[found[0].line - 1]
    )
    assert report.status() == "fail"


def test_a_real_dynamic_quantization_leaves_its_trace(tmp_path: Path) -> None:
    from bundlekit import linear_model

    root = bundle_with_variant(tmp_path / "b", linear_model(), {"weight_type": "QInt8"})
    report = verify_bundle(root, Options())
    assert not [f for f in report.findings if f.id == F.VARIANT_TRANSFORM], report.findings


def test_int8_weights_in_constant_nodes_count_as_a_trace(tmp_path: Path) -> None:
    from bundlekit import linear_model

    model = linear_model()
    quantize_dynamic(_save(model, tmp_path / "f.onnx"), tmp_path / "q.onnx")
    quantized = onnx.load(str(tmp_path / "q.onnx"))
    graph = quantized.graph
    for tensor in list(graph.initializer):  # move every initializer into a Constant node
        graph.node.insert(0, helper.make_node("Constant", [], [tensor.name], value=tensor))
    del graph.initializer[:]
    assert read_facts(quantized).int8_weights
    where = {"file": "bundle.yaml", "line": 3}
    assert transform_findings("int8", transform(DYNAMIC, {"a": 1}), quantized, where) == []


def test_empty_settings_for_a_tool_with_settings_is_a_warning() -> None:
    from bundlekit import linear_model

    where = {"file": "bundle.yaml", "line": 3}
    found = transform_findings("x", transform("onnxsim", {}), linear_model(), where)
    assert found == []  # a tool without known settings may leave them empty
    found = transform_findings("x", transform(DYNAMIC, {}), None, where)
    assert [(f.severity, "settings is empty" in f.message) for f in found] == [(F.Severity.WARNING, True)]
    assert json.dumps(found[0].to_dict())


def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path
