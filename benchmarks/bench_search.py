"""The measured search of `checker diagnose --requantize` on a model of a few hundred MB: time and peak memory.

    python benchmarks/bench_search.py [--width 4096] [--layers 4] [--cases 4] [--budget 600]

The graph is a chain of MatMul + Relu layers, x[1, n] @ W[n, n], with seeded weights (4 layers of 4096 x 4096
float32: 256 MiB); the last layer holds one large weight, so its per-tensor int8 scale crushes the rest of that
layer and the int8 variant (quantize_static, QDQ, MinMax on the cases) fails its cosine rule. Keeping that layer
in float, or per-channel weights, brings it back: the search has something to find. Reported: the search's
wall time, the steps it measured, where it stopped, and the peak RSS against the float model's size (each step
re-quantizes and opens sessions on the baseline and the trial). Targets: the search stays within its budget,
and its peak RSS within 8x the float graph. Measured on 4 x 4096^2 (256 MiB): 57 s, 3 graphs judged, stopped
at "excluding fc3", peak 1554 MiB = 6.1x; quantize_static holds the model, its shape-inferred copy and the
calibration graph, while the checker holds the baseline and the shipped variant.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from material import checker_command, measure
from onnx import TensorProto, helper, numpy_helper

OUTLIER = 40.0


def chain(width: int, layers: int, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, weights = [], []
    name = "x"
    for i in range(layers):
        w = (rng.standard_normal((width, width), dtype=np.float32) / np.float32(np.sqrt(width))).astype(np.float32)
        if i == layers - 1:
            w[3, 5] = OUTLIER
        weights.append(numpy_helper.from_array(w, f"w{i}"))
        out = "y" if i == layers - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [name, f"w{i}"], [f"m{i}" if out != "y" else "y"], name=f"fc{i}"))
        if out != "y":
            nodes.append(helper.make_node("Relu", [f"m{i}"], [out], name=f"relu{i}"))
        name = out
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench")
    model.ir_version = 8
    return model


def write_bundle(root: Path, width: int, layers: int, cases: int) -> Path:
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    root.mkdir(parents=True)
    onnx.save(chain(width, layers), str(root / "model.onnx"))
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((1, width), dtype=np.float32) for _ in range(cases)]
    session = ort.InferenceSession(str(root / "model.onnx"), providers=["CPUExecutionProvider"])
    entries: list[dict[str, Any]] = []
    (root / "cases").mkdir()
    for i, x in enumerate(inputs):
        np.save(root / "cases" / f"x{i}.npy", x)
        np.save(root / "cases" / f"y{i}.npy", session.run(None, {"x": x})[0])
        entries.append({"name": f"c{i}", "inputs": {"x": f"cases/x{i}.npy"}, "expected": {"y": f"cases/y{i}.npy"}})
    del session

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items = iter(inputs)

        def get_next(self) -> dict[str, np.ndarray] | None:
            item = next(self._items, None)
            return None if item is None else {"x": item}

    quantize_static(
        str(root / "model.onnx"),
        str(root / "model.int8.onnx"),
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=False,
    )
    settings = {"quant_format": "QDQ", "activation_type": "QUInt8", "weight_type": "QInt8", "per_channel": False}
    manifest = {
        "manifest_version": 1,
        "release": {"name": "chain", "version": "1.0.0"},
        "graph": {"path": "model.onnx"},
        "inputs": [{"name": "x", "dtype": "float32", "shape": [1, width], "meaning": "tensor"}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": [1, width], "meaning": "embedding"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "comparison": {
            "reference": {"description": "the float chain"},
            "cases": entries,
            "rules": [{"output": "y", "check": "max_abs", "max": 1e-3}],
        },
        "variants": [
            {
                "name": "int8",
                "graph": {"path": "model.int8.onnx"},
                "derived_from": "baseline",
                "transform": {
                    "tool": "onnxruntime.quantization.quantize_static",
                    "version": "1.32.0",
                    "settings": settings,
                },
                "rules": [{"output": "y", "check": "cosine", "min": 0.999}],
            }
        ],
    }
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--cases", type=int, default=4)
    parser.add_argument("--budget", type=float, default=600.0, help="the search's --search-budget, in seconds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        root = write_bundle(Path(tmp) / "b", args.width, args.layers, args.cases)
        model_mib = (root / "model.onnx").stat().st_size / 2**20
        print(f"bundle: {model_mib:.0f} MiB float graph, built in {time.perf_counter() - started:.1f} s")
        result = Path(tmp) / "out.json"
        command = [*checker_command(), "diagnose", str(root), "--variant", "int8", "--requantize"]
        command += ["--search-budget", str(args.budget), "--format", "json"]
        run = measure(["sh", "-c", 'exec "$@" > "$0"', str(result), *command])  # the report to a file
        if run.returncode != 0:
            out = subprocess.run(command, capture_output=True, text=True, check=False)
            print(out.stdout[-2000:], out.stderr[-2000:], file=sys.stderr)
            return 1
        done = json.loads(result.read_text())["requantize"]
    found = (done.get("found") or {}).get("label", "nothing")
    print(f"search: {run.wall_s:.1f} s wall, {run.cpu_s:.1f} s CPU, {len(done['tried'])} graphs judged, stopped: "
          f"{done['stopped']} ({found})")  # fmt: skip
    print(f"peak RSS: {run.peak_rss_mib:.0f} MiB = {run.peak_rss_mib / model_mib:.2f}x the float graph")
    return 0


if __name__ == "__main__":
    sys.exit(main())
