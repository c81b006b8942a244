"""Dynamic axes of a real recurrent model: Silero VAD 6.2.3 (`input [batch, 576]`, `state [2, batch, 128]`,
`sr` a scalar), the ONNX graph its PyPI wheel ships (fetched once by tests/fetch_models.py).

Its cases are consecutive frames of a speech-like signal, each fed with the state the previous frame left, as
the package's OnnxWrapper streams them. Stacking two cases must stack `state` along its axis 1 (the axis named
`batch`) together with `input` along axis 0, and keep `sr` as it is; the outputs (`output [batch, 1]`,
`stateN [2, batch, 128]`) are split along their own `batch` axis. A graph planted to mix its state across the
batch, identical to the real one at batch 1, must still fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from bundlekit import put, write_manifest
from fetch_models import cached
from onnx import helper

from checker import findings as F
from checker.compare.dynamic import Declared, dynamic_axes
from checker.context import Options
from checker.verify import verify_bundle

MODEL = "silero_vad_16k_op15.onnx"
CHUNK, CONTEXT, RATE, FRAMES = 512, 64, 16000, 4


@pytest.fixture(scope="module")
def silero() -> onnx.ModelProto:
    path = cached(MODEL)
    if path is None:
        pytest.skip(f"{MODEL} is not in the model cache; fetch it with: python tests/fetch_models.py")
    return onnx.load(str(path))


def speech(seconds: float = FRAMES * CHUNK / RATE) -> np.ndarray:
    """A voiced 150 Hz tone with a 4 Hz syllable envelope and breath noise, at 16 kHz."""
    t = np.arange(int(seconds * RATE)) / RATE
    voiced = np.sin(2 * np.pi * 150 * t) * (1 + np.sin(2 * np.pi * 4 * t)) * 0.3
    return (voiced + np.random.default_rng(7).normal(0, 0.02, t.size)).astype(np.float32)


def frames(model: onnx.ModelProto) -> list[dict[str, np.ndarray]]:
    """Each frame's feed as OnnxWrapper builds it (the last 64 samples before the chunk, then the chunk) with the
    state the previous frame returned, and that frame's outputs."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    audio, state, sr = speech(), np.zeros((2, 1, 128), np.float32), np.array(RATE, np.int64)
    context = np.zeros(CONTEXT, np.float32)
    out = []
    for i in range(FRAMES):
        chunk = audio[i * CHUNK : (i + 1) * CHUNK]
        x = np.concatenate([context, chunk])[None]
        prob, state_n = session.run(["output", "stateN"], {"input": x, "state": state, "sr": sr})
        out.append({"input": x, "state": state, "sr": sr, "output": prob, "stateN": state_n})
        context, state = chunk[-CONTEXT:], state_n
    return out


def write_silero(root: Path, model: onnx.ModelProto, reference: onnx.ModelProto) -> Path:
    """A bundle of `model` whose cases are `reference`'s outputs on consecutive frames."""
    put(root / "model.onnx", model)
    cases = []
    for i, frame in enumerate(frames(reference)):
        for name, value in frame.items():
            put(root / f"cases/f{i}_{name}.npy", value)
        inputs = {n: f"cases/f{i}_{n}.npy" for n in ("input", "state", "sr")}
        expected = {n: f"cases/f{i}_{n}.npy" for n in ("output", "stateN")}
        cases.append({"name": f"frame{i}", "tags": ["edge"], "inputs": inputs, "expected": expected})
    custom: dict[str, Any] = {"kind": "custom", "description": "zeros at the start of a stream; then the last stateN"}
    data = {
        "manifest_version": 1,
        "release": {"name": "silero-vad", "version": "6.2.3"},
        "graph": {"path": "model.onnx", "producer": {"tool": "silero-vad wheel", "version": "6.2.3"}},
        "inputs": [
            {"name": "input", "dtype": "float32", "shape": ["batch", CHUNK + CONTEXT], "meaning": "audio"}
            | {"preprocessing": {"kind": "custom", "description": "64 samples of context, then 512 at 16 kHz"}},
            {"name": "state", "dtype": "float32", "shape": [2, "batch", 128], "meaning": "state"}
            | {"preprocessing": custom},
            {"name": "sr", "dtype": "int64", "shape": [], "meaning": "tensor"}
            | {"preprocessing": {"kind": "custom", "description": "the sample rate, 16000"}},
        ],
        "outputs": [
            {"name": "output", "dtype": "float32", "shape": ["batch", 1], "meaning": "regression"},
            {"name": "stateN", "dtype": "float32", "shape": [2, "batch", 128], "meaning": "regression"},
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "onnxruntime on the OnnxWrapper's frames"},
            "cases": cases,
            "rules": [
                {"output": "output", "check": "max_abs", "max": 1e-5},
                {"output": "stateN", "check": "max_abs", "max": 1e-5},
            ],
        },
    }
    write_manifest(root, data)
    return root


def state_mixed_across_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """The graph with its state replaced by (state + its mean over the batch) - state: at batch 1 that is the
    state itself, bit for bit, so every single frame still matches; two stacked items share one state."""
    planted = onnx.ModelProto()
    planted.CopyFrom(model)
    _rename_uses(planted.graph, "state", "state_mixed")
    nodes = [
        helper.make_node("ReduceMean", ["state"], ["state_mean"], axes=[1], keepdims=1, name="planted_mean"),
        helper.make_node("Add", ["state", "state_mean"], ["state_sum"], name="planted_add"),
        helper.make_node("Sub", ["state_sum", "state"], ["state_mixed"], name="planted_sub"),
    ]
    for node in reversed(nodes):
        planted.graph.node.insert(0, node)
    return planted


def _rename_uses(graph: onnx.GraphProto, old: str, new: str) -> None:
    """Every use of `old`, in the graph and in the subgraphs of its If and Loop nodes (which see outer names)."""
    for node in graph.node:
        node.input[:] = [new if i == old else i for i in node.input]
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                _rename_uses(sub, old, new)


def dynamic_findings(root: Path) -> tuple[list[F.Finding], str, list[str]]:
    report = verify_bundle(root, Options())
    found = [f for f in report.findings if f.id == F.GRAPH_DYNAMIC_AXES]
    return found, report.status(), [c.status for c in report.comparisons]


def test_the_batch_names_the_state_axis_too(silero: onnx.ModelProto) -> None:
    declared = {"input": Declared(["batch", 576]), "state": Declared([2, "batch", 128])}
    (axis,) = dynamic_axes(silero, declared)
    assert axis.name == "batch" and dict(axis.axes) == {"input": 0, "state": 1}
    # A release that fixes the state's batch to 1 fixes the input's too: nothing is stacked.
    assert dynamic_axes(silero, {"state": Declared([2, 1, 128])}) == []


def test_silero_vad_is_batch_dynamic_with_its_state_stacked_along_axis_1(
    silero: onnx.ModelProto, tmp_path: Path
) -> None:
    found, status, comparisons = dynamic_findings(write_silero(tmp_path / "b", silero, silero))
    assert [f.message for f in found] == []
    assert status == "pass" and comparisons == ["pass"]


def test_a_state_mixed_across_the_batch_is_caught(silero: onnx.ModelProto, tmp_path: Path) -> None:
    root = write_silero(tmp_path / "b", state_mixed_across_batch(silero), silero)
    found, status, comparisons = dynamic_findings(root)
    assert comparisons == ["pass"]  # each frame alone is the real model's
    (finding,) = found
    assert status == "fail"
    assert "dim 'batch' ('input' axis 0, 'state' axis 1)" in finding.message
    assert "cases 'frame0' and 'frame1' stacked" in finding.message
    assert "differs from its single run" in finding.message
