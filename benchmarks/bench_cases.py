"""Many cases: a manifest of 10,000 cases loads in <= 1 s, becomes typed blocks in <= 0.2x that, and the
comparison's cost grows linearly with cases.

    python benchmarks/bench_cases.py [--counts 100,1000,10000] [--repeat 3]

The graph is tiny (x[batch, 4] -> Relu -> y), so what grows is the checker's own work per case: loading the
manifest's entries, the case files, one run and the rules. For each count the script times `load_manifest` on
the bundle's manifest (in-process, the median of `--repeat`) and `build(Spec, data)`, the typed manifest the
stages read (`Context.spec`), on what it loaded; and `checker verify` as a whole process; the
slope is the extra wall time per case, from the smallest count to each larger one, and linear growth means the
slopes agree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from material import Measured, checker_command, measure, median
from onnx import TensorProto, helper

from checker.manifest.load import load_manifest
from checker.manifest.model.build import build
from checker.manifest.model.root import Spec


def write_bundle(root: Path, count: int) -> Path:
    root.mkdir(parents=True)
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), root / "model.onnx")
    rng = np.random.default_rng(0)
    (root / "cases").mkdir()
    entries = []
    for i in range(count):
        x = rng.standard_normal((1, 4), dtype=np.float32)
        np.save(root / "cases" / f"x{i}.npy", x)
        np.save(root / "cases" / f"y{i}.npy", np.maximum(x, 0))
        entries.append(
            {
                "name": f"case-{i:05d}",
                "tags": ["edge"] if i == 0 else [],
                "inputs": {"x": f"cases/x{i}.npy"},
                "expected": {"y": f"cases/y{i}.npy"},
            }
        )
    (root / "bundle.yaml").write_text(json.dumps(_manifest(entries), indent=1))  # JSON is YAML: either loader
    return root


def _manifest(cases: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "manifest_version": 1,
        "release": {"name": "many-cases", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {
                "name": "x",
                "dtype": "float32",
                "shape": ["batch", 4],
                "meaning": "tensor",
                "preprocessing": {"kind": "custom", "description": "random features"},
            }
        ],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 4], "meaning": "embedding"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "NumPy maximum(x, 0)"},
            "cases": cases,
            "rules": [{"output": "y", "check": "allclose", "atol": 1e-6, "rtol": 1e-6}],
        },
    }


def load_seconds(manifest: Path, repeat: int) -> tuple[float, float, float]:
    """Median wall and CPU seconds of load_manifest (parse, version, schema) on one manifest, and the median CPU
    seconds of building its typed blocks (CPU: on a shared machine it is the steadier of the two)."""
    load_manifest(manifest)  # the libraries it imports are loaded once per process; time the parse and the schema
    walls, cpus, builds = [], [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        loaded, found = load_manifest(manifest)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        assert loaded is not None and not found, found
        cpu = time.process_time()
        build(Spec, loaded.data)
        builds.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), statistics.median(builds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    walls: dict[int, float] = {}
    cpus: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cases-") as tmp:
        roots = {n: write_bundle(Path(tmp) / f"b{n}", n) for n in counts}
        for n, root in roots.items():
            size = (root / "bundle.yaml").stat().st_size / 1e6
            loaded, cpu, typed = load_seconds(root / "bundle.yaml", args.repeat)
            verdict = "" if n != 10_000 else f" (target <= 1 s) {'OK' if loaded <= 1 else 'MISSED'}"
            print(f"{n:>6} cases: manifest {size:.2f} MB loads in {loaded:.3f} s (cpu {cpu:.3f} s){verdict}")
            ratio, ok = typed / cpu, "OK" if typed <= 0.2 * cpu else "MISSED"
            print(f"{n:>6} cases: typed in {typed:.3f} s of cpu, {ratio:.2f}x the load's (target <= 0.2x) {ok}")
        cmds = {n: [*checker_command(), "verify", str(root), "--format", "json"] for n, root in roots.items()}
        for cmd in cmds.values():  # warm the page cache
            if measure(cmd).returncode != 0:
                raise SystemExit(f"the bundle does not pass: {' '.join(cmd)}")
        runs: dict[int, list[Measured]] = {n: [] for n in counts}
        for _ in range(args.repeat):  # interleaved
            for n, cmd in cmds.items():
                runs[n].append(measure(cmd))
        walls = {n: median([m.wall_s for m in r]) for n, r in runs.items()}
        cpus = {n: median([m.cpu_s for m in r]) for n, r in runs.items()}
    for n in counts:
        listed = ", ".join(f"{m.wall_s:.2f}" for m in runs[n])
        print(f"{n:>6} cases: checker verify {walls[n]:.2f} s (runs {listed}); cpu {cpus[n]:.2f} s")
    base = counts[0]
    for n in counts[1:]:
        slope, cpu_slope = ((v[n] - v[base]) / (n - base) for v in (walls, cpus))
        print(f"slope {base} -> {n} cases: {slope * 1000:.3f} ms per case (cpu {cpu_slope * 1000:.3f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
