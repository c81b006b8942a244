"""A streaming application declared as it feeds its graph: `stream: {chunk, history, first}` on an audio input.

The real model is Silero VAD's ONNX graph from its `silero-vad` wheel (tests/fetch_models.py caches it). Its
package's OnnxWrapper is the oracle: it feeds 512-sample chunks at 16 kHz, each preceded by the last 64 samples
of the stream (zeros before the first chunk), and carries the model's state from call to call. A case stores
each call's tensors on a leading axis; the checker rebuilds the frames from the WAV and runs the graph once per
frame with the state the application fed.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile
import soxr
from fetch_models import cached
from modelkit import run

from checker.context import Options
from checker.preprocess.audio.pipeline import build_audio
from checker.preprocess.audio.spec import AudioSpec
from checker.preprocess.audio.stream import Stream
from checker.preprocess.errors import PreprocessError
from checker.verify import verify_paths

MODEL = "silero_vad_16k_op15.onnx"
CHUNK, CONTEXT, RATE = 512, 64, 16000
PREP: dict[str, Any] = {
    "kind": "audio",
    "sample_rate": RATE,
    "channels": 1,
    "steps": [{"decode": {}}, {"mix": "mono"}, {"resample": {"rate": RATE}}, {"layout": "NT"}],
    "stream": {"chunk": CHUNK, "history": CONTEXT, "first": "zeros"},
}


@pytest.fixture(scope="session")
def silero() -> Path:
    path = cached(MODEL)
    if path is None:
        pytest.skip(f"{MODEL} is not in the model cache; fetch it with: python tests/fetch_models.py")
    return path


def write_wav(path: Path, seconds: float, seed: int, rate: int = 44100) -> None:
    """Stereo speech-like bursts, 16-bit PCM."""
    t = np.arange(int(seconds * rate)) / rate
    rng = np.random.default_rng(seed)
    voiced = np.sin(2 * np.pi * 150 * t) * (1 + np.sin(2 * np.pi * 4 * t)) * 0.3
    stereo = np.stack([voiced + rng.normal(0, 0.02, t.size), 0.6 * voiced + rng.normal(0, 0.02, t.size)], axis=1)
    soundfile.write(str(path), stereo, rate, subtype="PCM_16")


def application(model: Path, wav: Path) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """What Silero's OnnxWrapper feeds, call by call, and what the graph answers: the chunk after the last 64
    samples (zeros at the start), the state the previous call returned, and the rate."""
    data, rate = soundfile.read(str(wav), dtype="float32", always_2d=True)
    audio = np.asarray(soxr.resample(data.mean(axis=1), rate, RATE), dtype=np.float32)
    context, state = np.zeros((1, CONTEXT), np.float32), np.zeros((2, 1, 128), np.float32)
    inputs: dict[str, list[np.ndarray]] = {"input": [], "state": [], "sr": []}
    answers = []
    for start in range(0, audio.size - CHUNK + 1, CHUNK):
        x = np.concatenate([context, audio[None, start : start + CHUNK]], axis=1)
        feed = {"input": x, "state": state, "sr": np.array(RATE, np.int64)}
        out = run(model, feed)
        for name, value in feed.items():
            inputs[name].append(value)
        answers.append(out["output"])
        context, state = x[:, -CONTEXT:], out["stateN"]
    return {n: np.stack(v) for n, v in inputs.items()}, np.stack(answers)


def write_bundle(root: Path, model: Path, prep: dict[str, Any], cases: int = 2) -> Path:
    (root / "cases").mkdir(parents=True)
    (root / "model.onnx").write_bytes(model.read_bytes())
    entries = []
    for i in range(cases):
        wav = root / "cases" / f"utt{i}.wav"
        write_wav(wav, 0.2 + 0.05 * i, seed=i)
        inputs, output = application(model, wav)
        files = {}
        for name, value in inputs.items():
            np.save(root / "cases" / f"utt{i}_{name}.npy", value)
            files[name] = f"cases/utt{i}_{name}.npy"
        np.save(root / "cases" / f"utt{i}_prob.npy", output)
        entries.append(
            {
                "name": f"utt{i}",
                "tags": ["edge"],
                "inputs": files,
                "expected": {"output": f"cases/utt{i}_prob.npy"},
                "raw": {"input": f"cases/utt{i}.wav"},
            }
        )
    custom = {"kind": "custom", "description": "zeros at the start of a stream; then the previous call's stateN"}
    manifest = {
        "manifest_version": 1,
        "release": {"name": "silero-vad-stream", "version": "6.2.3"},
        "graph": {"path": "model.onnx", "producer": {"tool": "silero-vad wheel", "version": "6.2.3"}},
        "inputs": [
            {
                "name": "input",
                "dtype": "float32",
                "shape": [1, CHUNK + CONTEXT],
                "meaning": "audio",
                "preprocessing": prep,
            },
            {"name": "state", "dtype": "float32", "shape": [2, 1, 128], "meaning": "state", "preprocessing": custom},
            {"name": "sr", "dtype": "int64", "shape": [], "meaning": "tensor"}
            | {"preprocessing": {"kind": "custom", "description": "the sample rate, 16000"}},
        ],
        "outputs": [{"name": "output", "dtype": "float32", "shape": [1, 1], "meaning": "regression"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "onnxruntime on the OnnxWrapper's calls"},
            "cases": entries,
            "rules": [{"output": "output", "check": "max_abs", "max": 1e-5}],
        },
    }
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root


def verified(root: Path) -> dict[str, Any]:
    result: dict[str, Any] = verify_paths([str(root)], Options()).to_dict()["bundles"][0]
    return result


def errors(bundle: dict[str, Any]) -> list[str]:
    return [f"{f['id']}: {f['message']}" for f in bundle["findings"] if f["severity"] == "error"]


def test_a_streaming_vad_declared_as_its_application_feeds_it_passes(silero: Path, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", silero, PREP)
    bundle = verified(root)
    assert errors(bundle) == []
    assert not [f for f in bundle["findings"] if f["id"] == "inputs.fidelity"]
    comparison = bundle["comparisons"][0]
    assert comparison["status"] == "pass"
    # One call per whole chunk of each clip: 0.2 s and 0.25 s at 16 kHz are 6 and 7 chunks of 512.
    frames = json.dumps(comparison)
    assert "utt0[5]" in frames and "utt1[6]" in frames and "utt0[6]" not in frames


def test_the_other_first_frame_is_named_as_the_edit(silero: Path, tmp_path: Path) -> None:
    prep = copy.deepcopy(PREP)
    prep["stream"]["first"] = "skip"
    bundle = verified(write_bundle(tmp_path / "b", silero, prep, cases=1))
    fidelity = [f["message"] for f in bundle["findings"] if f["id"] == "inputs.fidelity"]
    assert len(fidelity) == 1
    assert "`stream: {chunk: 512, history: 64, first: zeros}` in place of" in fidelity[0]


def test_chunk_and_history_swapped_are_named(silero: Path, tmp_path: Path) -> None:
    prep = copy.deepcopy(PREP)
    prep["stream"] = {"chunk": CONTEXT, "history": CHUNK, "first": "zeros"}
    bundle = verified(write_bundle(tmp_path / "b", silero, prep, cases=1))
    fidelity = [f["message"] for f in bundle["findings"] if f["id"] == "inputs.fidelity"]
    assert len(fidelity) == 1
    assert "`stream: {chunk: 512, history: 64, first: zeros}`" in fidelity[0]


def test_a_case_whose_tensors_store_other_numbers_of_frames_is_refused(silero: Path, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", silero, PREP, cases=1)
    state = np.load(root / "cases" / "utt0_state.npy")
    np.save(root / "cases" / "utt0_state.npy", state[:-1])
    bundle = verified(root)
    messages = [f["message"] for f in bundle["findings"] if f["id"] == "comparison.case"]
    assert len(messages) == 1
    assert "feeds the streamed input 'input'" in messages[0]
    assert "'input' 6" in messages[0] and "'state' 5" in messages[0]


def test_frames_are_cut_after_the_whole_signal_steps_and_each_frame_runs_the_rest(tmp_path: Path) -> None:
    """decode, mix and resample read the whole clip; a normalisation after them runs on each call's samples."""
    wav = tmp_path / "a.wav"
    write_wav(wav, 0.1, seed=3, rate=RATE)
    prep = {
        "kind": "audio",
        "steps": [{"decode": {}}, {"mix": "mono"}, {"normalize": "zero_mean_unit_var"}],
        "stream": {"chunk": 300, "history": 500, "first": "skip"},
    }
    spec = AudioSpec.from_manifest(prep)
    data, _ = soundfile.read(str(wav), dtype="float32", always_2d=True)
    mono = data.mean(axis=1, dtype=np.float32)
    from checker.preprocess.audio.decode import DecodeCache

    made = build_audio(spec, DecodeCache(wav, "a.wav"), "NT", "float32").tensor
    # skip: the first call is the one whose 500 samples of history all lie in the clip (the second chunk of 300).
    starts = [k * 300 - 500 for k in range(2, mono.size // 300)]
    assert made.shape == (len(starts), 1, 800)
    for frame, start in zip(made, starts, strict=True):
        x = mono[start : start + 800]
        want = (x - x.mean(dtype=np.float32)) / np.sqrt(x.var(dtype=np.float32) + np.float32(1e-7))
        np.testing.assert_allclose(frame[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("stream", "samples", "starts"),
    [
        (Stream(4, 2, "zeros"), 13, [-2, 2, 6]),
        (Stream(4, 2, "skip"), 13, [2, 6]),
        (Stream(4, 6, "skip"), 17, [2, 6]),  # history over one chunk: two chunks wait
        (Stream(4, 0, "skip"), 13, [0, 4, 8]),  # no history: nothing to wait for
        (Stream(4, 2, "skip"), 3, []),
    ],
)
def test_where_each_call_begins(stream: Stream, samples: int, starts: list[int]) -> None:
    assert stream.starts(samples) == starts


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ({"history": 3}, "stream: 'chunk' is a required property"),
        ({"chunk": 0}, "stream.chunk: 0 is less than the minimum of 1"),
        ({"chunk": 4, "history": -1}, "stream.history: -1 is less than the minimum of 0"),
        ({"chunk": 4, "first": "ones"}, "stream.first: 'ones' is not one of ['skip', 'zeros']"),
        ({"chunk": 4, "hop": 2}, "stream.hop: unknown field 'hop'"),
        ({"chunk": True}, "stream.chunk: True is not of type 'integer'"),
        ({"chunk": 4.0}, "`stream.chunk` is 4.0; expected an integer"),
    ],
)
def test_a_bad_stream_block_is_refused_in_its_words(block: dict[str, Any], words: str) -> None:
    with pytest.raises(PreprocessError, match=re.escape(words)):
        AudioSpec.from_manifest({"kind": "audio", "steps": [{"decode": {}}], "stream": block})


def test_a_stream_without_steps_is_refused() -> None:
    with pytest.raises(PreprocessError, match="declare the `steps` too"):
        AudioSpec.from_manifest({"kind": "audio", "stream": {"chunk": 4}})


def test_a_history_the_stored_calls_length_implies_is_named(silero: Path, tmp_path: Path) -> None:
    """Declared without history (a call of 512), stored with 64 samples of it: the stored call's length says so."""
    prep = copy.deepcopy(PREP)
    prep["stream"] = {"chunk": CHUNK, "first": "zeros"}
    bundle = verified(write_bundle(tmp_path / "b", silero, prep, cases=1))
    fidelity = [f["message"] for f in bundle["findings"] if f["id"] == "inputs.fidelity"]
    assert len(fidelity) == 1
    assert "`stream: {chunk: 512, history: 64, first: zeros}` in place of" in fidelity[0]


def test_implied_streams_fit_the_stored_shape() -> None:
    from checker.preprocess.audio.stream import implied

    # The stored call is longer than declared: the declared chunk with the rest as history, and the reverse.
    assert implied(Stream(512, 0, "zeros"), 3200, 6, 576)[:2] == [Stream(512, 64, "zeros"), Stream(576, 0, "zeros")]
    # The declared call's length, another number of calls: only chunks that give the stored count are tried.
    found = implied(Stream(64, 512, "zeros"), 3200, 6, 576)
    assert found and all(len(s.starts(3200)) == 6 and s.length == 576 for s in found)


# openWakeWord's front end, from its 0.5.1 wheel. Its AudioFeatures buffer takes 1,280 new samples per call and
# calls the mel-spectrogram graph on the last 1,280 + 480 samples of 16 kHz int16 audio as float32 (utils.py,
# `_streaming_melspectrogram`); the first chunk, before a whole history, is not a full call.
WAKE_CHUNK, WAKE_HISTORY = 1280, 480
WAKE_PREP: dict[str, Any] = {
    "kind": "audio",
    "sample_rate": RATE,
    "channels": 1,
    "steps": [{"decode": {}}, {"scale": 32768}, {"layout": "NT"}],
    "stream": {"chunk": WAKE_CHUNK, "history": WAKE_HISTORY, "first": "skip"},
}


@pytest.fixture(scope="session")
def melspectrogram() -> Path:
    path = cached("melspectrogram.onnx")
    if path is None:
        pytest.skip("melspectrogram.onnx is not in the model cache; fetch it with: python tests/fetch_models.py")
    return path


def wake_calls(model: Path, wav: Path) -> tuple[np.ndarray, np.ndarray]:
    """The buffer's calls once it holds a whole history: int16 sample values as float32, and the graph's answers."""
    samples, _ = soundfile.read(str(wav), dtype="int16")
    calls = [
        samples[end - WAKE_CHUNK - WAKE_HISTORY : end].astype(np.float32)[None]
        for end in range(2 * WAKE_CHUNK, samples.size + 1, WAKE_CHUNK)
    ]
    return np.stack(calls), np.stack([run(model, {"input": x})["output"] for x in calls])


def test_a_wake_word_front_end_fed_as_its_buffer_feeds_it_passes(melspectrogram: Path, tmp_path: Path) -> None:
    root = tmp_path / "b"
    (root / "cases").mkdir(parents=True)
    (root / "model.onnx").write_bytes(melspectrogram.read_bytes())
    t = np.arange(RATE) / RATE
    voice = 0.3 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t))
    noise = np.random.default_rng(7).normal(0, 0.02, t.size)
    soundfile.write(str(root / "cases" / "kitchen.wav"), voice + noise, RATE, subtype="PCM_16")  # a mono microphone
    calls, answers = wake_calls(melspectrogram, root / "cases" / "kitchen.wav")
    np.save(root / "cases" / "kitchen.npy", calls)
    np.save(root / "cases" / "kitchen_mel.npy", answers)
    manifest: dict[str, Any] = {
        "manifest_version": 1,
        "release": {"name": "openwakeword-melspectrogram", "version": "0.5.1"},
        "graph": {"path": "model.onnx", "producer": {"tool": "openwakeword wheel", "version": "0.5.1"}},
        "inputs": [{"name": "input", "dtype": "float32", "shape": [1, WAKE_CHUNK + WAKE_HISTORY], "meaning": "audio"}],
        "outputs": [
            {"name": "output", "dtype": "float32", "shape": ["time", 1, "frames", 32]} | {"meaning": "embedding"}
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "onnxruntime on the AudioFeatures buffer's calls"},
            "cases": [
                {
                    "name": "kitchen",
                    "tags": ["edge"],
                    "inputs": {"input": "cases/kitchen.npy"},
                    "expected": {"output": "cases/kitchen_mel.npy"},
                    "raw": {"input": "cases/kitchen.wav"},
                }
            ],
            "rules": [{"output": "output", "check": "max_abs", "max": 1e-3}],
        },
    }
    manifest["inputs"][0]["preprocessing"] = WAKE_PREP
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    bundle = verified(root)
    assert errors(bundle) == []
    assert bundle["comparisons"][0]["status"] == "pass"
    assert calls.shape[0] == 11  # 12 whole chunks in a second, the first without its history
    assert "kitchen[10]" in json.dumps(bundle["comparisons"][0])

    # Declared in -1..1 (no scale step) with zeros before the first chunk: each mistake named by its edit.
    prep = copy.deepcopy(WAKE_PREP)
    prep["stream"]["first"] = "zeros"
    manifest["inputs"][0]["preprocessing"] = prep
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    fidelity = [f["message"] for f in verified(root)["findings"] if f["id"] == "inputs.fidelity"]
    assert len(fidelity) == 1 and "first: skip}` in place of" in fidelity[0]
    prep = copy.deepcopy(WAKE_PREP)
    del prep["steps"][1]
    manifest["inputs"][0]["preprocessing"] = prep
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    fidelity = [f["message"] for f in verified(root)["findings"] if f["id"] == "inputs.fidelity"]
    assert len(fidelity) == 1 and "`scale: 32768` added" in fidelity[0]


def test_case_add_makes_a_streamed_case_from_its_recording(melspectrogram: Path, tmp_path: Path) -> None:
    """`checker case add --raw` cuts the recording into the application's calls; the answers it is given must
    hold the same number of calls."""
    from checker.cli import main

    root = tmp_path / "b"
    root.mkdir()
    (root / "model.onnx").write_bytes(melspectrogram.read_bytes())
    wav = tmp_path / "hall.wav"
    t = np.arange(RATE + 700) / RATE
    soundfile.write(str(wav), 0.4 * np.sin(2 * np.pi * 330 * t), RATE, subtype="PCM_16")
    calls, answers = wake_calls(melspectrogram, wav)
    np.save(tmp_path / "mel.npy", answers)
    np.save(tmp_path / "short.npy", answers[:-1])
    manifest = {
        "manifest_version": 1,
        "release": {"name": "wake", "version": "1"},
        "graph": {"path": "model.onnx", "producer": {"tool": "openwakeword wheel", "version": "0.5.1"}},
        "inputs": [{"name": "input", "dtype": "float32", "shape": [1, 1760], "meaning": "audio"}],
        "outputs": [{"name": "output", "dtype": "float32", "shape": ["time", 1, "frames", 32], "meaning": "embedding"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "onnxruntime on the buffer's calls"},
            "cases": [],
            "rules": [{"output": "output", "check": "max_abs", "max": 1e-3}],
        },
    }
    manifest["inputs"][0]["preprocessing"] = WAKE_PREP
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    add = ["case", "add", str(root), "--name", "hall", "--raw", f"input={wav}", "--tag", "edge"]
    assert main([*add, "--expected", f"output={tmp_path / 'short.npy'}"]) == 2
    assert main([*add, "--expected", f"output={tmp_path / 'mel.npy'}"]) == 0
    stored = np.load(root / "cases" / "hall" / "input.npy")
    np.testing.assert_array_equal(stored, calls)
    bundle = verified(root)
    assert errors(bundle) == [] and bundle["comparisons"][0]["status"] == "pass"
