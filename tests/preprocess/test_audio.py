"""Audio inputs rebuilt from WAV files by their `steps`, inside `checker verify`, on a real ONNX audio model.

The model is a small keyword-spotter-shaped graph built with onnx.helper (a strided Conv1d over the waveform,
ReLU, a mean over time, a linear layer): it takes [N, samples] at 16 kHz, as wav2vec2-style and VAD models do.
The stored tensors come from the application's own code, written here directly with the libraries it uses
(soundfile to decode, soxr to resample, and the zero-mean unit-variance normalisation of Hugging Face's
Wav2Vec2FeatureExtractor); the checker must rebuild them with no tolerance override and a raw file for every
case. Each single mistake planted in the manifest must then be caught by inputs.fidelity, by name.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import wave
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import onnx
import pytest
import soundfile
import soxr
from modelkit import run
from onnx import TensorProto, helper, numpy_helper

from checker.context import Options
from checker.manifest.schema import load
from checker.preprocess.audio.decode import DecodeCache, decode_audio
from checker.preprocess.audio.pipeline import Signal, arrange, build_audio
from checker.preprocess.audio.spec import AudioSpec
from checker.preprocess.errors import PreprocessError
from checker.verify import verify_paths

FILE_RATE, MODEL_RATE = 44100, 16000
STEPS: list[dict[str, Any]] = [
    {"decode": {"library": "soundfile"}},
    {"mix": {"to": "mono"}},
    {"resample": {"rate": MODEL_RATE}},
    {"normalize": {"mode": "zero_mean_unit_var"}},
    {"layout": "NT"},
]


def write_wav(path: Path, seconds: float, seed: int, channels: int = 2, rate: int = FILE_RATE, width: int = 2) -> None:
    """A tone with noise, louder on the left than the right, as PCM through the standard library."""
    t = np.arange(int(seconds * rate)) / rate
    noise = np.random.default_rng(seed).normal(0, 0.05, (t.size, channels))
    tone = 0.5 * np.sin(2 * np.pi * (220 + 110 * seed) * t)[:, None] * np.linspace(1.0, 0.3, channels)[None]
    signal = np.clip(tone + noise, -1, 1)
    if width == 1:
        data = (signal * 127 + 128).astype(np.uint8).tobytes()
    elif width == 3:
        ints = (signal * (2**23 - 1)).astype("<i4")
        data = ints.view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    else:
        data = (signal * (2 ** (8 * width - 1) - 1)).astype(f"<i{width}").tobytes()
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(data)


def application(path: Path) -> np.ndarray:
    """What the application feeds the model, in its own words."""
    data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    mono = data.mean(axis=1)
    x = soxr.resample(mono, rate, MODEL_RATE)
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    return np.asarray(x, dtype=np.float32)[None]


def spotter() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.1, (8, 1, 400)).astype(np.float32), "conv_w"),
        numpy_helper.from_array(rng.normal(0, 0.1, (4, 8)).astype(np.float32), "fc_w"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([2], np.int64), "time"),
    ]
    nodes = [
        helper.make_node("Unsqueeze", ["waveform", "one"], ["channels"]),
        helper.make_node("Conv", ["channels", "conv_w"], ["conv"], strides=[160]),
        helper.make_node("Relu", ["conv"], ["act"]),
        helper.make_node("ReduceMean", ["act", "time"], ["pooled"], keepdims=0),
        helper.make_node("Gemm", ["pooled", "fc_w"], ["logits"], transB=1),
    ]
    x = helper.make_tensor_value_info("waveform", TensorProto.FLOAT, ["N", "samples"])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 4])
    model = helper.make_model(
        helper.make_graph(nodes, "spotter", [x], [y], inits), opset_imports=[helper.make_opsetid("", 18)]
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write_bundle(root: Path, steps: list[dict[str, Any]], **prep: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    model = spotter()
    onnx.save(model, str(root / "model.onnx"))
    (root / "labels.txt").write_text("yes\nno\nup\ndown\n")
    (root / "cases").mkdir(exist_ok=True)
    cases = []
    for i, seconds in enumerate((0.25, 0.4)):
        wav = root / "cases" / f"clip{i}.wav"
        write_wav(wav, seconds, seed=i)
        tensor = application(wav)
        np.save(root / "cases" / f"clip{i}_in.npy", tensor)
        np.save(root / "cases" / f"clip{i}_out.npy", run(model, {"waveform": tensor})["logits"])
        cases.append(
            {
                "name": f"clip{i}",
                "tags": ["edge"],
                "inputs": {"waveform": f"cases/clip{i}_in.npy"},
                "expected": {"logits": f"cases/clip{i}_out.npy"},
                "raw": {"waveform": f"cases/clip{i}.wav"},
            }
        )
    declared = {"kind": "audio", "sample_rate": MODEL_RATE, "channels": 1, "steps": steps, **prep}
    preprocessing = {k: v for k, v in declared.items() if v is not None}
    manifest = {
        "manifest_version": 1,
        "release": {"name": "spotter", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {"name": "waveform", "dtype": "float32", "shape": ["N", "samples"], "meaning": "audio"}
            | {"preprocessing": preprocessing}
        ],
        "outputs": [
            {"name": "logits", "dtype": "float32", "shape": ["N", 4], "meaning": "logits"}
            | {"labels": {"path": "labels.txt"}}
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "the application's soundfile + soxr pipeline, then the graph"},
            "cases": cases,
            "rules": [{"output": "logits", "check": "allclose", "atol": 1e-4}],
        },
    }
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root


def verify(root: Path) -> dict[str, Any]:
    report = verify_paths([str(root)], Options()).to_dict()
    bundle: dict[str, Any] = report["bundles"][0]
    return bundle


def fidelity(bundle: dict[str, Any]) -> list[str]:
    return [f["message"] for f in bundle["findings"] if f["id"] in ("inputs.fidelity", "inputs.not_rebuilt")]


def planted(tmp_path: Path, edit: Any, **prep: Any) -> list[str]:
    steps = copy.deepcopy(STEPS)
    edit(steps)
    return fidelity(verify(write_bundle(tmp_path / "b", steps, **prep)))


def test_the_declared_steps_rebuild_the_application_tensors_exactly(tmp_path: Path) -> None:
    bundle = verify(write_bundle(tmp_path / "b", STEPS))
    assert [f for f in bundle["findings"] if f["id"] == "manifest.schema"] == []
    assert fidelity(bundle) == []
    assert bundle["comparisons"][0]["status"] == "pass"


def test_a_wrong_resample_rate_is_named(tmp_path: Path) -> None:
    def wrong(steps: list[dict[str, Any]]) -> None:
        steps[2] = {"resample": {"rate": 22050}}

    messages = planted(tmp_path, wrong, sample_rate=None)
    assert len(messages) == 2  # one per case
    assert "with `resample: {rate: 16000}` in place of `resample: {rate: 22050}`" in messages[0]


def test_a_declared_sample_rate_the_steps_do_not_reach_is_an_error_saying_so(tmp_path: Path) -> None:
    messages = planted(tmp_path, lambda steps: steps.pop(2))
    assert len(messages) == 2
    assert (
        "the rebuilt signal is at 44100 Hz (the file's own rate: no resample step brings it to 16000 Hz)"
        in (messages[0])
    )
    assert "the input declares sample_rate 16000" in messages[0]


def test_stereo_left_unmixed_is_named(tmp_path: Path) -> None:
    messages = planted(tmp_path, lambda steps: steps.pop(1))
    assert "layout NT has no C axis, but the signal has 2 along it (mix the channels first)" in messages[0]


def test_the_wrong_channel_mix_is_named(tmp_path: Path) -> None:
    def first(steps: list[dict[str, Any]]) -> None:
        steps[1] = {"mix": {"to": "first"}}

    messages = planted(tmp_path, first)
    assert "with `mix: {to: mono}` in place of `mix: {to: first}`" in messages[0]


def test_a_missing_normalisation_is_named(tmp_path: Path) -> None:
    messages = planted(tmp_path, lambda steps: steps.pop(3))
    assert "with `normalize: {mode: zero_mean_unit_var}` added after `resample: {rate: 16000}`" in messages[0]


def test_steps_in_the_wrong_order_are_named(tmp_path: Path) -> None:
    def swapped(steps: list[dict[str, Any]]) -> None:
        steps[2], steps[3] = steps[3], steps[2]

    messages = planted(tmp_path, swapped)
    assert "with `resample: {rate: 16000}` before `normalize: {mode: zero_mean_unit_var}`" in messages[0]


def test_a_missing_library_is_not_rebuilt_naming_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_bundle(tmp_path / "b", STEPS)
    monkeypatch.setitem(sys.modules, "soxr", None)  # as on a machine without the [audio] extra
    messages = fidelity(verify(root))
    assert len(messages) == 1
    assert "soxr is not installed" in messages[0] and "onnx-release-checker[audio]" in messages[0]


def test_audio_without_steps_keeps_its_old_meaning(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", STEPS)
    data = json.loads((root / "bundle.json").read_text())
    del data["inputs"][0]["preprocessing"]["steps"]
    (root / "bundle.json").write_text(json.dumps(data))
    assert fidelity(verify(root)) == []


def test_schema_takes_the_audio_steps_and_refuses_unknown_ones() -> None:
    schema = load("manifest")
    entry = {"name": "x", "dtype": "float32", "meaning": "audio"}
    inputs = schema["properties"]["inputs"]
    every = [
        *STEPS,
        {"gain": {"db": -3}},
        {"scale": 0.5},
        {"pad": {"at_least": 16000, "position": "center"}},
        {"trim": {"to": 32000}},
        {"frames": {"size": 512, "hop": 160}},
        {"batch": {"repeat": 3}},
        {"cast": "int16"},
    ]
    jsonschema.validate([entry | {"preprocessing": {"kind": "audio", "steps": every}}], inputs)
    for bad in ({"resample": {"rate": 0}}, {"echo": {}}, {"mix": "left"}, {"mix": {}, "scale": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate([entry | {"preprocessing": {"kind": "audio", "steps": [bad]}}], inputs)


# ----- the steps themselves, on real files


@pytest.mark.parametrize("width", [1, 2, 3])
def test_the_wave_decoder_scales_pcm_as_soundfile_does(tmp_path: Path, width: int) -> None:
    path = tmp_path / "a.wav"
    write_wav(path, 0.05, seed=3, width=width)
    ours = decode_audio(path, "a.wav", "wave")
    theirs = decode_audio(path, "a.wav", "soundfile")
    assert ours.rate == theirs.rate == FILE_RATE
    assert ours.samples.shape == theirs.samples.shape == (2, int(0.05 * FILE_RATE))
    np.testing.assert_allclose(ours.samples, theirs.samples, atol=1e-7)


def test_scipy_resampling_matches_scipy(tmp_path: Path) -> None:
    from scipy.signal import resample_poly

    path = tmp_path / "a.wav"
    write_wav(path, 0.1, seed=4, channels=1)
    spec = AudioSpec.from_manifest({"steps": [{"resample": {"rate": 16000, "library": "scipy"}}, {"layout": "T"}]})
    made = build_audio(spec, DecodeCache(path, "a.wav"), "", "float32")
    data, _ = soundfile.read(str(path), dtype="float32")
    np.testing.assert_allclose(made.tensor, resample_poly(data, 160, 441).astype(np.float32), atol=1e-6)
    assert made.rate == 16000


def test_frames_pad_trim_and_batch(tmp_path: Path) -> None:
    path = tmp_path / "a.wav"
    write_wav(path, 0.01, seed=5, channels=1, rate=8000)  # 80 samples
    raw, _ = soundfile.read(str(path), dtype="float32")

    def build(steps: list[dict[str, Any]], layout: str = "") -> np.ndarray:
        spec = AudioSpec.from_manifest({"steps": steps})
        return build_audio(spec, DecodeCache(path, "a.wav"), layout, "float32").tensor

    framed = build([{"frames": {"size": 32, "hop": 16}}], "TF")
    assert framed.shape == (1 + 3, 32)  # 80 samples: windows at 0, 16, 32, 48; the last padded
    np.testing.assert_array_equal(framed[1], raw[16:48])
    np.testing.assert_array_equal(framed[3][:32], np.pad(raw[48:80], (0, 0)))
    padded = build([{"pad": {"to": 100, "position": "end", "value": 0.5}}], "T")
    np.testing.assert_array_equal(padded[:20], np.full(20, 0.5, np.float32))
    np.testing.assert_array_equal(padded[20:], raw)
    assert build([{"pad": {"at_least": 50}}], "T").shape == (80,)
    np.testing.assert_array_equal(build([{"trim": {"to": 40, "position": "center"}}], "T"), raw[20:60])
    batch = build([{"batch": {"repeat": 3}}, {"layout": "NT"}])
    assert batch.shape == (3, 80) and np.array_equal(batch[2], raw)
    ints = build([{"scale": 32767}, {"cast": "int16"}], "NT")
    assert ints.dtype == np.float32 and np.array_equal(ints[0], np.rint(raw * np.float32(32767)))


def test_arrange_needs_a_single_channel_to_drop_it() -> None:
    signal = Signal(np.zeros((2, 5), np.float32), "CT", 8000, 8000)
    assert arrange(signal, "NCT").shape == (1, 2, 5)
    assert arrange(signal, "TC").shape == (5, 2)
    with pytest.raises(Exception, match="mix the channels first"):
        arrange(signal, "NT")


# ----- hostile or broken input: a clear finding naming the file, never a traceback


def test_a_file_that_is_not_audio_is_an_error_of_its_case(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", STEPS)
    (root / "cases" / "clip0.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot really")
    messages = fidelity(verify(root))
    assert len(messages) == 1
    assert "case 'clip0'" in messages[0] and "cases/clip0.wav cannot be decoded as audio" in messages[0]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"resample": {"rate": "fast"}}], "steps[0].resample.rate: 'fast' is not of type 'integer'"),
        ([{"frames": {"size": 1 << 40}}], "steps[0].frames.size: 1099511627776 is greater than the maximum of"),
        ([{"normalize": {"mean": [0.1, 0.2, 0.3]}}], "cannot be applied to a signal of shape [2, "),
        ([{"decode": {}}, {"decode": {}}], "`decode` must be the first step"),
        ([{"echo": {}}], "steps[0].echo: unknown field 'echo'"),
    ],
)
def test_bad_steps_are_refused_by_name(tmp_path: Path, steps: list[dict[str, Any]], message: str) -> None:
    path = tmp_path / "a.wav"
    write_wav(path, 0.01, seed=6)
    with pytest.raises(PreprocessError, match=re.escape(message)):
        spec = AudioSpec.from_manifest({"steps": steps})
        build_audio(spec, DecodeCache(path, "a.wav"), "NCT", "float32")


def test_the_preprocess_command_writes_the_audio_tensor(tmp_path: Path) -> None:
    from checker.cli import main

    root = write_bundle(tmp_path / "b", STEPS)
    wav, out = tmp_path / "speech.wav", tmp_path / "speech.npy"
    write_wav(wav, 0.3, seed=7)
    assert main(["preprocess", str(root), "--input", "waveform", str(wav), "-o", str(out)]) == 0
    np.testing.assert_allclose(np.load(out), application(wav), atol=1e-5)


def test_a_missing_mix_before_a_channel_axis_is_explained(tmp_path: Path) -> None:
    from checker.preprocess.audio.explain import explain_audio
    from checker.preprocess.audio.source import AudioSource
    from checker.preprocess.rebuild import Inputs, open_source

    wav = tmp_path / "a.wav"
    write_wav(wav, 0.05, seed=8)
    stored = application(wav)[None]  # [N, C, T]: one mixed channel
    steps = [s for s in STEPS if "mix" not in s and "layout" not in s]
    entry = {"name": "x", "dtype": "float32", "shape": [1, 1, "T"], "layout": "NCT"}
    entry["preprocessing"] = {"kind": "audio", "steps": steps}
    source = open_source(Inputs.from_data([entry], tmp_path), "x", wav, "a.wav")
    assert isinstance(source, AudioSource)
    assert source.build()["x"].shape == (1, 2, stored.shape[-1])  # both channels kept, as declared
    assert explain_audio(source, stored, 1e-5) == "with `mix: {to: mono}` added after `decode: {library: soundfile}`"
    assert set(source.decoded.done) == {"soundfile", "wave"}  # one decode per library, shared by the neighbours


def test_a_typed_step_says_itself_in_the_manifest_s_words() -> None:
    from checker.preprocess.audio.steps import Mix, Resample, parse_steps

    resample = Resample.parse({"library": "scipy", "rate": 16000}, "steps[0] `resample`")
    assert (resample.rate, resample.library, resample.quality) == (16000, "scipy", "HQ")
    assert resample.words() == "`resample: {library: scipy, rate: 16000}`"  # the keys in the manifest's order
    assert resample.changed(quality="VHQ").words() == "`resample: {library: scipy, rate: 16000, quality: VHQ}`"
    mix = Mix.parse("first", "steps[0] `mix`")
    assert mix.to == "first" and mix.words() == "`mix: first`"
    assert parse_steps([{"mix": "mono"}])[0].words() == "`decode: {}`"  # the decode a list without one gets
    with pytest.raises(PreprocessError, match=r"`resample`\.resample\.speed: unknown field 'speed'"):
        Resample.parse({"rate": 16000, "speed": 2}, "steps[0] `resample`")
