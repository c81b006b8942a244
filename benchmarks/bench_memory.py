"""A large bundle: `checker verify` on a graph that keeps 1 GiB of weights in an external-data file.

    python benchmarks/bench_memory.py [--gib 1.0] [--cases 4] [--repeat 3]

Targets: peak RSS <= 1.3x the weights, and wall time <= 1.1x the floor's: a bare script that opens one
onnxruntime session on the graph, loads and runs the cases and compares them with numpy.allclose. The graph is
one MatMul, x[1, n] @ W[n, n], with W (random float32) streamed to `model.onnx.data` in chunks, so building the
bundle never holds the weights in memory either. The bundle lives in the system's temporary folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from material import Measured, checker_command, measure, median
from onnx import TensorProto, helper

CHUNK_ROWS = 256
FLOOR = """
import json, sys, numpy as np, onnxruntime as ort
from pathlib import Path
root = Path(sys.argv[1])
data = json.loads((root / "bundle.json").read_text())
s = ort.InferenceSession(str(root / "model.onnx"), providers=["CPUExecutionProvider"])
ok = True
for case in data["comparison"]["cases"]:
    y = s.run(None, {"x": np.load(root / case["inputs"]["x"])})[0]
    ok &= bool(np.allclose(y, np.load(root / case["expected"]["y"]), atol=1e-3, rtol=1e-3))
sys.exit(0 if ok else 1)
"""


def write_weights(path: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with path.open("wb") as out:
        for start in range(0, n, CHUNK_ROWS):
            rows = min(CHUNK_ROWS, n - start)
            out.write((rng.standard_normal((rows, n), dtype=np.float32) / np.float32(np.sqrt(n))).tobytes())


def external_tensor(name: str, n: int, location: str) -> TensorProto:
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[n, n])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(4 * n * n))):
        tensor.external_data.add(key=key, value=value)
    return tensor


def write_bundle(root: Path, n: int, cases: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_weights(root / "model.onnx.data", n)
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")
    graph = helper.make_graph(
        [node],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])],
        [external_tensor("w", n, "model.onnx.data")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (root / "model.onnx").write_bytes(model.SerializeToString())
    entries = _cases(root, n, cases)
    (root / "bundle.json").write_text(json.dumps(_manifest(n, entries), indent=2))
    return root


def _cases(root: Path, n: int, count: int) -> list[dict[str, object]]:
    """Inputs and expected outputs, the products computed a block of rows at a time."""
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((1, n), dtype=np.float32) for _ in range(count)]
    weights = np.memmap(root / "model.onnx.data", dtype=np.float32, mode="r", shape=(n, n))
    ys = [np.zeros((1, n), np.float64) for _ in xs]
    for start in range(0, n, 4096):
        block = np.asarray(weights[start : start + 4096], dtype=np.float64)
        for x, y in zip(xs, ys, strict=True):
            y += x[:, start : start + 4096].astype(np.float64) @ block
    del weights
    entries = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        np.save(root / f"x{i}.npy", x)
        np.save(root / f"y{i}.npy", y.astype(np.float32))
        entries.append(
            {"name": f"case-{i}", "tags": ["edge"], "inputs": {"x": f"x{i}.npy"}, "expected": {"y": f"y{i}.npy"}}
        )
    return entries


def _manifest(n: int, cases: list[dict[str, object]]) -> dict[str, object]:
    return {
        "manifest_version": 1,
        "release": {"name": "big-weights", "version": "1.0.0"},
        "graph": {
            "path": "model.onnx",
            "external_data": [{"path": "model.onnx.data"}],
            "producer": {"tool": "onnx.helper", "version": onnx.__version__},
        },
        "inputs": [
            {
                "name": "x",
                "dtype": "float32",
                "shape": ["batch", n],
                "meaning": "tensor",
                "preprocessing": {"kind": "custom", "description": "random features"},
            }
        ],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", n], "meaning": "embedding"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "NumPy float64 matmul"},
            "cases": cases,
            "rules": [
                {"output": "y", "check": "allclose", "atol": 1e-3, "rtol": 1e-3},
                {"output": "y", "check": "cosine", "min": 0.9999},
            ],
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0, help="size of the weights")
    parser.add_argument("--cases", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = int(np.sqrt(args.gib * (1 << 30) / 4))
    weights_mib = 4 * n * n / (1 << 20)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        root = write_bundle(Path(tmp) / "bundle", n, args.cases)
        cmds = {
            "floor": [sys.executable, "-c", FLOOR, str(root)],
            "checker": [*checker_command(), "verify", str(root), "--format", "json"],
        }
        for name, cmd in cmds.items():  # once each to warm the page cache
            if measure(cmd).returncode != 0:
                raise SystemExit(f"{name} does not pass")
        runs: dict[str, list[Measured]] = {name: [] for name in cmds}
        for _ in range(args.repeat):  # interleaved
            for name, cmd in cmds.items():
                runs[name].append(measure(cmd))
    print(f"weights {weights_mib:.0f} MiB (W[{n}, {n}] float32, external data), {args.cases} cases")
    walls = {name: median([m.wall_s for m in r]) for name, r in runs.items()}
    rss = {name: max(m.peak_rss_mib for m in r) for name, r in runs.items()}
    for name, r in runs.items():
        print(
            f"{name:>8}: wall {walls[name]:6.2f} s (runs {', '.join(f'{m.wall_s:.2f}' for m in r)}); "
            f"cpu {median([m.cpu_s for m in r]):6.2f} s; peak RSS {rss[name]:6.0f} MiB "
            f"({rss[name] / weights_mib:.2f}x the weights)"
        )
    memory, speed = rss["checker"] / weights_mib, walls["checker"] / walls["floor"]
    print(f"checker peak RSS / weights: {memory:.2f} (target <= 1.3) {'OK' if memory <= 1.3 else 'MISSED'}")
    print(f"checker / floor median wall: {speed:.3f} (target <= 1.1) {'OK' if speed <= 1.1 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
