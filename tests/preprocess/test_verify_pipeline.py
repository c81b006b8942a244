"""The range and fidelity stages inside `checker verify`, on a complete bundle with a real ONNX graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from bundlekit import put, write_manifest
from onnx import TensorProto, helper
from PIL import Image
from prepkit import photo

from checker.context import Options
from checker.verify import verify_paths

SIDE = 32


def write_bundle(root: Path) -> None:
    x = helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [1, 3, SIDE, SIDE])
    y = helper.make_tensor_value_info("emb", TensorProto.FLOAT, [1, 3])
    axes = helper.make_tensor("axes", TensorProto.INT64, [2], [2, 3])
    node = helper.make_node("ReduceMean", ["pixel_values", "axes"], ["emb"], keepdims=0)
    graph = helper.make_graph([node], "mean_colour", [x], [y], [axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="tests")
    model.ir_version = 8
    put(root / "model.onnx", model)
    put(root / "cases" / "cat.png", photo("chelsea.png"))
    with Image.open(root / "cases" / "cat.png") as im:
        img = np.asarray(im.convert("RGB").resize((SIDE, SIDE), Image.Resampling.BILINEAR), dtype=np.float64)
    stored = {"good": img / 255, "bgr": img[..., ::-1] / 255, "unscaled": img}
    cases = []
    for name, hwc in stored.items():
        tensor = hwc.transpose(2, 0, 1)[None].astype(np.float32)
        put(root / "cases" / f"{name}_in.npy", tensor)
        put(root / "cases" / f"{name}_out.npy", tensor.mean(axis=(2, 3)))
        cases.append(
            {
                "name": name,
                "tags": ["edge"],
                "inputs": {"pixel_values": f"cases/{name}_in.npy"},
                "expected": {"emb": f"cases/{name}_out.npy"},
                "raw": {"pixel_values": "cases/cat.png"},
            }
        )
    prep = {"kind": "image", "resize": {"mode": "exact", "size": [SIDE, SIDE]}, "scale": 0.00392156862745098}
    manifest = {
        "manifest_version": 1,
        "release": {"name": "mean-colour", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {"name": "pixel_values", "dtype": "float32", "shape": [1, 3, SIDE, SIDE], "layout": "NCHW"}
            | {"meaning": "image", "preprocessing": prep}
        ],
        "outputs": [{"name": "emb", "dtype": "float32", "shape": [1, 3], "meaning": "embedding"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "NumPy mean of the stored input"},
            "cases": cases,
            "rules": [{"output": "emb", "check": "allclose", "atol": 1e-5}],
        },
    }
    write_manifest(root, manifest)


def test_verify_reports_fidelity_and_range(tmp_path: Path) -> None:
    write_bundle(tmp_path)
    report = verify_paths([str(tmp_path)], Options()).to_dict()
    (bundle,) = report["bundles"]
    found = {(f["id"], f.get("details", {}).get("case")): f for f in bundle["findings"]}
    assert not [f for f in bundle["findings"] if f["id"] == "manifest.schema"]
    assert ("inputs.fidelity", "good") not in found
    assert "with channels reversed" in found[("inputs.fidelity", "bgr")]["message"]
    assert "0-255 where 0-1 is declared" in found[("inputs.fidelity", "unscaled")]["message"]
    # out of range too, but the explained fidelity finding says why: the range finding would only repeat it
    assert ("inputs.range", "unscaled") not in found
    assert bundle["status"] == "fail"
