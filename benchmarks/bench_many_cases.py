"""`checker verify` on a release of many cases (10,000 by default): wall time, peak RSS, and that it passes with
the file-descriptor limit at 1024 (every case's tensors are opened; none may stay open)."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import yaml
from onnx import TensorProto, helper, numpy_helper

FD_LIMIT = 1024


def model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def write(root: Path, count: int) -> Path:
    """A complete bundle of `count` cases, each an input and an expected .npy."""
    graph = model()
    onnx.save(graph, str(root / "model.onnx"))
    weights = {t.name: numpy_helper.to_array(t) for t in graph.graph.initializer}
    (root / "cases").mkdir()
    rng = np.random.default_rng(1)
    cases = []
    for i in range(count):
        x = rng.standard_normal((1, 4)).astype(np.float32)
        np.save(root / f"cases/x{i}.npy", x)
        np.save(root / f"cases/y{i}.npy", (x @ weights["W"] + weights["b"]).astype(np.float32))
        tags = ["edge"] if i == 0 else ["ordinary"]
        cases.append(
            {
                "name": f"case-{i:05d}",
                "tags": tags,
                "inputs": {"x": f"cases/x{i}.npy"},
                "expected": {"y": f"cases/y{i}.npy"},
            }
        )
    data = {
        "manifest_version": 1,
        "release": {"name": "many-cases", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {
                "name": "x",
                "dtype": "float32",
                "shape": ["batch", 4],
                "meaning": "tabular",
                "preprocessing": {"kind": "custom", "description": "features"},
            }
        ],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 3], "meaning": "regression"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17,<2"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "NumPy"},
            "cases": cases,
            "rules": [{"output": "y", "check": "allclose", "atol": 1e-5, "rtol": 1e-4}],
        },
    }
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root / "bundle.yaml"


def limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write(Path(tmp), args.cases)
        print(f"{args.cases} cases; manifest {manifest.stat().st_size} bytes")
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "checker", "verify", str(manifest.parent), "--format", "json"],
            capture_output=True,
            text=True,
            preexec_fn=limit_fds,
            check=False,
        )
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        status = json.loads(done.stdout)["status"] if done.stdout.startswith("{") else done.stderr[-2000:]
        print(
            f"exit {done.returncode}, status {status}; wall {wall:.1f} s; peak RSS {peak:.0f} MiB "
            f"(file descriptors limited to {FD_LIMIT})"
        )
        return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
