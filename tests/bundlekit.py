"""The one bundle builder of the tests: files put into a bundle folder, a manifest written beside them, and the
`Context` a stage sees; plus a small linear graph with cases and a complete manifest around it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
import yaml
from onnx import TensorProto, helper, numpy_helper

if TYPE_CHECKING:
    from checker.context import Context, Options

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "mobilenet-tiny"


def put(path: Path, content: Any) -> Path:
    """Write one bundle file: an array as .npy, a graph as .onnx, a Path copied, text or bytes as they are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, np.ndarray):
        np.save(path, content)
    elif isinstance(content, onnx.ModelProto):
        onnx.save(content, str(path))
    elif isinstance(content, Path):
        shutil.copyfile(content, path)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def write_manifest(root: Path, data: dict[str, Any], name: str = "bundle.yaml") -> Path:
    """The manifest as YAML (or JSON, by its name), in the bundle folder."""
    text = json.dumps(data, indent=2) if name.endswith(".json") else yaml.safe_dump(data, sort_keys=False)
    return put(root / name, text)


def context_for(root: Path, name: str = "bundle.yaml", options: Options | None = None) -> Context:
    """The Context the stages share, for the manifest `name` in `root`, loaded with line marks as verify does."""
    from checker.context import Context, Options
    from checker.manifest.load import load_manifest

    loaded, found = load_manifest(root / name)
    assert loaded is not None, found
    return Context(root, loaded, options or Options())


def build_wheel(dest: Path) -> Path:
    """This project's wheel, built from the working tree without touching the network."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dest), str(REPO)],
        check=True,
    )
    return next(dest.glob("*.whl"))


def linear_model(n_in: int = 4, n_out: int = 3, seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    """y = x @ W + b: small, exact, and with a weight that can be stored externally."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_in, n_out)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", n_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n_out])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def linear_forward(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return (x @ init["W"] + init["b"]).astype(np.float32)


def manifest(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "manifest_version": 1,
        "release": {"name": "linear", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {
                "name": "x",
                "dtype": "float32",
                "shape": ["batch", 4],
                "meaning": "tabular",
                "preprocessing": {"kind": "custom", "description": "standardised features"},
            }
        ],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 3], "meaning": "regression"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17,<2"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "NumPy"},
            "cases": [],
            "rules": [{"output": "y", "check": "allclose", "atol": 1e-5, "rtol": 1e-4}],
        },
    }
    base.update(overrides)
    return base


def write_bundle(
    root: Path, model: onnx.ModelProto, data: dict[str, Any], n_cases: int = 3, external: bool = False
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if external:
        stored = onnx.ModelProto()
        stored.CopyFrom(model)  # saving converts tensors to references in place; keep the caller's model whole
        onnx.save(
            stored, str(root / "model.onnx"), save_as_external_data=True, location="model.onnx.data", size_threshold=0
        )
        data["graph"]["external_data"] = [{"path": "model.onnx.data"}]
    else:
        put(root / "model.onnx", model)
    rng = np.random.default_rng(1)
    if not data["comparison"]["cases"]:
        for i in range(n_cases):
            x = rng.standard_normal((2, 4)).astype(np.float32)
            put(root / f"cases/x{i}.npy", x)
            put(root / f"cases/y{i}.npy", linear_forward(model, x))
            data["comparison"]["cases"].append(
                {
                    "name": f"c{i}",
                    "tags": ["edge"] if i == 0 else [],
                    "inputs": {"x": f"cases/x{i}.npy"},
                    "expected": {"y": f"cases/y{i}.npy"},
                }
            )
    write_manifest(root, data)
    return root


def run_in(cwd: Path, *argv: str) -> int:
    """`checker ARGV` in-process with `cwd` as the working folder (paths in reports are then relative to it)."""
    from checker.cli import main

    here = Path.cwd()
    os.chdir(cwd)
    try:
        return main(list(argv))
    finally:
        os.chdir(here)
