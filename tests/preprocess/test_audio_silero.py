"""A real speech model from PyPI fed from WAV: Silero VAD, the ONNX graph its `silero-vad` wheel ships.

The wheel is fetched once, without its dependencies, into the tests' model cache by tests/fetch_models.py (CI
runs it before the tests, which never reach the network), and only its ONNX file is used: the package's
Python code needs torch. The oracle follows the package's own `OnnxWrapper.__call__` (utils_vad.py):
16 kHz mono chunks of 512 samples, each preceded by the last 64 samples of context (zeros for the first chunk),
fed with a zero state [2, 1, 128] and `sr`. The checker must rebuild that tensor from the WAV exactly, and name
a planted wrong rate.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile
import soxr
from fetch_models import cached
from modelkit import run

from checker.context import Options
from checker.verify import verify_paths

VERSION = "6.2.3"
MODEL = "silero_vad_16k_op15.onnx"
CHUNK, CONTEXT, RATE = 512, 64, 16000
STEPS: list[dict[str, Any]] = [
    {"decode": {}},
    {"mix": "mono"},
    {"resample": {"rate": RATE}},
    {"trim": {"to": CHUNK}},
    {"pad": {"to": CHUNK + CONTEXT, "position": "end"}},  # the signal sits at the end: zeros before it
    {"layout": "NT"},
]


@pytest.fixture(scope="session")
def silero() -> Path:
    """The ONNX file of the silero-vad wheel, from the tests' model cache (CI fills it before the tests)."""
    path = cached(MODEL)
    if path is None:
        pytest.skip(f"{MODEL} is not in the model cache; fetch it with: python tests/fetch_models.py")
    return path


def write_wav(path: Path, seed: int) -> None:
    """Stereo 44.1 kHz speech-like noise bursts, 16-bit PCM."""
    rate = 44100
    t = np.arange(int(0.1 * rate)) / rate
    rng = np.random.default_rng(seed)
    voiced = np.sin(2 * np.pi * 150 * t) * (1 + np.sin(2 * np.pi * 4 * t)) * 0.3
    stereo = np.stack([voiced + rng.normal(0, 0.02, t.size), 0.6 * voiced + rng.normal(0, 0.02, t.size)], axis=1)
    soundfile.write(str(path), stereo, rate, subtype="PCM_16")


def oracle(path: Path) -> np.ndarray:
    """The first chunk as the package's OnnxWrapper builds it, read and resampled as an application does."""
    data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    audio = soxr.resample(data.mean(axis=1), rate, RATE)
    chunk = np.asarray(audio[:CHUNK], dtype=np.float32)[None]
    context = np.zeros((1, CONTEXT), np.float32)
    return np.concatenate([context, chunk], axis=1)


def write_bundle(root: Path, model: Path, steps: list[dict[str, Any]]) -> Path:
    (root / "cases").mkdir(parents=True)
    (root / "model.onnx").write_bytes(model.read_bytes())
    state, sr = np.zeros((2, 1, 128), np.float32), np.array(RATE, np.int64)
    np.save(root / "cases" / "state.npy", state)
    np.save(root / "cases" / "sr.npy", sr)
    cases = []
    for i in range(2):
        wav = root / "cases" / f"utt{i}.wav"
        write_wav(wav, seed=i)
        x = oracle(wav)
        np.save(root / "cases" / f"utt{i}.npy", x)
        outputs = run(root / "model.onnx", {"input": x, "state": state, "sr": sr})
        np.save(root / "cases" / f"utt{i}_prob.npy", outputs["output"])
        cases.append(
            {
                "name": f"utt{i}",
                "tags": ["edge"],
                "inputs": {"input": f"cases/utt{i}.npy", "state": "cases/state.npy", "sr": "cases/sr.npy"},
                "expected": {"output": f"cases/utt{i}_prob.npy"},
                "raw": {"input": f"cases/utt{i}.wav"},
            }
        )
    custom = {"kind": "custom", "description": "zeros at the start of a stream; then the previous stateN"}
    manifest = {
        "manifest_version": 1,
        "release": {"name": "silero-vad", "version": VERSION},
        "graph": {"path": "model.onnx", "producer": {"tool": "silero-vad wheel", "version": VERSION}},
        "inputs": [
            {"name": "input", "dtype": "float32", "shape": [1, CHUNK + CONTEXT], "meaning": "audio"}
            | {"preprocessing": {"kind": "audio", "sample_rate": RATE, "channels": 1, "steps": steps}},
            {"name": "state", "dtype": "float32", "shape": [2, 1, 128], "meaning": "state", "preprocessing": custom},
            {"name": "sr", "dtype": "int64", "shape": [], "meaning": "tensor"}
            | {"preprocessing": {"kind": "custom", "description": "the sample rate, 16000"}},
        ],
        "outputs": [{"name": "output", "dtype": "float32", "shape": [1, 1], "meaning": "regression"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "onnxruntime on the OnnxWrapper's input"},
            "cases": cases,
            "rules": [{"output": "output", "check": "max_abs", "max": 1e-5}],
        },
    }
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root


def fidelity(root: Path) -> tuple[dict[str, Any], list[str]]:
    bundle = verify_paths([str(root)], Options()).to_dict()["bundles"][0]
    return bundle, [f["message"] for f in bundle["findings"] if f["id"].startswith("inputs.")]


def test_silero_vad_input_is_rebuilt_from_wav_exactly(silero: Path, tmp_path: Path) -> None:
    bundle, messages = fidelity(write_bundle(tmp_path / "b", silero, STEPS))
    assert [f for f in bundle["findings"] if f["severity"] == "error"] == []
    assert messages == []
    assert bundle["comparisons"][0]["status"] == "pass"


def test_silero_vad_at_the_wrong_rate_is_named(silero: Path, tmp_path: Path) -> None:
    steps = copy.deepcopy(STEPS)
    steps[2] = {"resample": {"rate": 8000}}
    _, messages = fidelity(write_bundle(tmp_path / "b", silero, steps))
    assert "the rebuilt signal is at 8000 Hz (after its resample step)" in messages[0]
    assert "the input declares sample_rate 16000" in messages[0]
