"""What rules on answers add to `checker verify`: a 64-case detector bundle judged with and without them.

    python benchmarks/bench_answers.py [--cases 64] [--repeat 5]

The detector is NudeNet's YOLOv8n (`nudenet-320n.onnx`, [1, 22, 2100], from the tests' model cache: run
`python tests/fetch_models.py` first), its cases seeded images. Both bundles run the same graph on the same cases
with the same tensor rule (`allclose` on output0); one also declares the `detections` answer (transpose, threshold
0.25, NMS 0.45) and judges it (`answer: objects, check: detections`), which decodes all 2100 rows of every case.
Each `checker verify` runs once to warm the page cache, then `--repeat` times, the two interleaved; the medians of
wall time are compared. Target: answers add <= 10 %.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fetch_models import cached

ANSWERS = [
    {
        "name": "objects",
        "kind": "detections",
        "from": "output0",
        "steps": [{"transpose": [0, 2, 1]}],
        "decode": {"layout": "yolo", "box_format": "cxcywh", "min_score": 0.25, "nms": {"iou": 0.45}},
    }
]


def write_bundle(root: Path, model: Path, cases: int, answers: bool) -> Path:
    import onnxruntime as ort

    root.mkdir(parents=True)
    shutil.copyfile(model, root / "model.onnx")
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    entries = []
    for i in range(cases):
        x = rng.uniform(0, 1, (1, 3, 320, 320)).astype(np.float32)
        np.save(root / f"{i}.x.npy", x)
        np.save(root / f"{i}.y.npy", session.run(["output0"], {"images": x})[0])
        entries.append({"name": f"c{i}", "tags": ["edge"] if i == 0 else [], "inputs": {"images": f"{i}.x.npy"},
                        "expected": {"output0": f"{i}.y.npy"}})  # fmt: skip
    rules: list[dict[str, object]] = [{"output": "output0", "check": "allclose", "atol": 1e-3, "rtol": 1e-3}]
    manifest: dict[str, object] = {
        "manifest_version": 1,
        "release": {"name": "bench-answers", "version": "1"},
        "graph": {"path": "model.onnx", "producer": {"tool": "nudenet wheel", "version": "3.4.2"}},
        "inputs": [{"name": "images", "dtype": "float32", "shape": [1, 3, 320, 320], "meaning": "image",
                    "preprocessing": {"kind": "custom", "description": "seeded noise"}}],
        "outputs": [{"name": "output0", "dtype": "float32", "shape": [1, 22, 2100], "meaning": "boxes"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.20", "session_options": {"intra_op_num_threads": 1}},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {"reference": {"description": "onnxruntime"}, "cases": entries, "rules": rules},
    }  # fmt: skip
    if answers:
        manifest["answers"] = ANSWERS
        rules.append({"answer": "objects", "check": "detections", "iou": 0.9})
    (root / "bundle.json").write_text(json.dumps(manifest))
    return root


def timed(bundle: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "checker", "verify", str(bundle)], check=False, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    model = cached("nudenet-320n.onnx")
    if model is None:
        print("nudenet-320n.onnx is not in the tests' model cache: run python tests/fetch_models.py")
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-answers-") as tmp:
        plain = write_bundle(Path(tmp) / "plain", model, args.cases, answers=False)
        judged = write_bundle(Path(tmp) / "answers", model, args.cases, answers=True)
        timed(plain), timed(judged)  # warm the page cache
        times: dict[str, list[float]] = {"tensor rules only": [], "with answers": []}
        for _ in range(args.repeat):
            times["tensor rules only"].append(timed(plain))
            times["with answers"].append(timed(judged))
    medians = {k: statistics.median(v) for k, v in times.items()}
    for name, value in medians.items():
        print(f"{name:18s} median {value:.3f} s  ({', '.join(f'{t:.2f}' for t in times[name])})")
    ratio = medians["with answers"] / medians["tensor rules only"]
    verdict = "ok" if ratio <= 1.10 else "OVER"
    print(f"answers add {100 * (ratio - 1):+.1f} % ({args.cases} cases; target <= +10 %): {verdict}")
    return 0 if ratio <= 1.10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
