"""Explanations that search a little further: the resize's geometry and a missing letterbox among the edits,
mean and std swapped, an audio `scale` added or changed, and two edits where one leaves a remainder that a
second removes (channels reversed with 0-255 for 0-1; lowercase with accents stripped), ranked after every
single edit and said in the manifest's words.

The stored tensors are made as applications make them: Pillow's own resize, crop and paste, NumPy's int16 to
float conversion of 16-bit PCM, a tokenizers normalizer sequence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile
from PIL import Image
from prepkit import bundle_maker, photo

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.findings import Finding
from checker.preprocess.search import Alternative, explain

CHELSEA = photo("chelsea.png")  # 300 x 451
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
DECLARED = [
    {"decode": {"mode": "RGB"}},
    {"resize": {"shorter_side": 256}},
    {"crop": {"center": [224, 224]}},
    {"scale": 1 / 255},
    {"normalize": {"mean": MEAN, "std": STD}},
    {"layout": "NCHW"},
]


def _rgb(path: Path) -> Image.Image:
    with Image.open(path) as im:
        return im.convert("RGB")


def _tensor(pixels: np.ndarray, mean: list[float] = MEAN, std: list[float] = STD) -> np.ndarray:
    x = pixels.astype(np.float32) * np.float32(1 / 255)
    x = (x - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def _centre(im: Image.Image, size: int) -> Image.Image:
    w, h = im.size
    left, top = (w - size) // 2, (h - size) // 2
    return im.crop((left, top, left + size, top + size))


def _image_finding(tmp_path: Path, steps: list[dict[str, Any]], stored: np.ndarray, raw: Path) -> Finding:
    shape = [1, *(int(d) for d in stored.shape[1:])]
    entry = {"name": "x", "dtype": "float32", "shape": shape, "preprocessing": {"kind": "image", "steps": steps}}
    found = list(
        fidelity_stage(bundle_maker(tmp_path)([entry], [{"name": "c", "inputs": {"x": stored}, "raw": {"x": raw}}]))
    )
    assert [f.id for f in found] == [F.INPUTS_FIDELITY], [f.message for f in found]
    return found[0]


def test_a_square_squash_declared_as_a_shorter_side_is_named(tmp_path: Path) -> None:
    # the application squashes to 256 x 256 and crops the centre; the manifest keeps the aspect ratio
    stored = _tensor(np.asarray(_centre(_rgb(CHELSEA).resize((256, 256), Image.Resampling.BILINEAR), 224)))
    finding = _image_finding(tmp_path, DECLARED, stored, CHELSEA)
    assert finding.details["explanation"].startswith(
        "when `resize` has `size: [256, 256]` (the manifest has `shorter_side: 256`)"
    ), finding.message


def test_a_missing_letterbox_is_named(tmp_path: Path) -> None:
    # a detector's letterbox: the aspect ratio kept inside 320 x 320, the rest grey (114), the image centred
    im = _rgb(CHELSEA)
    w, h = im.size
    ratio = 320 / max(w, h)
    nw, nh = int(w * ratio + 0.5), int(h * ratio + 0.5)
    canvas = Image.new("RGB", (320, 320), (114, 114, 114))
    canvas.paste(im.resize((nw, nh), Image.Resampling.BILINEAR), ((320 - nw) // 2, (320 - nh) // 2))
    stored = (np.asarray(canvas).astype(np.float32) / 255).transpose(2, 0, 1)[None]
    steps = [{"decode": {"mode": "RGB"}}, {"resize": {"size": [320, 320]}}, {"scale": 1 / 255}, {"layout": "NCHW"}]
    finding = _image_finding(tmp_path, steps, stored, CHELSEA)
    assert finding.details["explanation"].startswith(
        "with the image letterboxed: `resize: {fit: [320, 320]}`, then `pad: {to: [320, 320], value: 114}` "
        "(the manifest has `size`)"
    ), finding.message


def test_mean_and_std_swapped_are_named(tmp_path: Path) -> None:
    im = _rgb(CHELSEA).resize((385, 256), Image.Resampling.BILINEAR)
    stored = _tensor(np.asarray(_centre(im, 224)), mean=STD, std=MEAN)  # each list in the other's place
    finding = _image_finding(tmp_path, DECLARED, stored, CHELSEA)
    assert finding.details["explanation"].startswith("when `normalize` has its mean and std swapped"), finding.message
    assert finding.details["fits"][0]["exact"]


def test_channels_reversed_with_0_255_for_0_1_is_two_edits_named_together(tmp_path: Path) -> None:
    # the application feeds BGR 0-255; the manifest declares RGB 0-1: no single edit reproduces it
    bgr = np.asarray(_centre(_rgb(CHELSEA).resize((385, 256), Image.Resampling.BILINEAR), 224))[..., ::-1]
    stored = bgr.astype(np.float32).transpose(2, 0, 1)[None]
    steps = [*DECLARED[:4], {"layout": "NCHW"}]
    finding = _image_finding(tmp_path, steps, stored, CHELSEA)
    explanation = finding.details["explanation"]
    assert "with channels reversed (BGR where RGB is declared)" in explanation, finding.message
    assert "`scale: 1`" in explanation and ", and " in explanation
    assert finding.details["fits"][0]["exact"]
    assert "no single usual mistake" not in finding.message


def test_two_edits_rank_after_every_single_edit_and_only_when_none_fits() -> None:
    stored = np.linspace(0, 1, 50, dtype=np.float32)
    two = Alternative("second", lambda: stored.copy(), 0.001)
    near = Alternative("near", lambda: stored + 0.1, 0.001, then=lambda: iter([two]))
    far = Alternative("far", lambda: stored + 0.5, 0.001, then=lambda: iter([Alternative("x", lambda: stored, 0)]))
    found = explain([far, near], stored)
    assert [(f.description, f.edits) for f in found.fits] == [("second", 2)]
    single = Alternative("single, less exact", lambda: stored + 0.0005, 0.001)
    assert [f.description for f in explain([near, single], stored).fits] == ["single, less exact"]


# Audio: a front end fed 16-bit sample values as floats, as openWakeWord feeds its melspectrogram model.


def _wav(path: Path) -> np.ndarray:
    rng = np.random.default_rng(7)
    pcm = (np.sin(np.linspace(0, 400, 8000)) * 12000 + rng.normal(0, 800, 8000)).astype(np.int16)
    soundfile.write(str(path), pcm, 16000, subtype="PCM_16")
    return pcm


def _audio_explanation(tmp_path: Path, steps: list[dict[str, Any]]) -> str:
    pcm = _wav(tmp_path / "clip.wav")
    stored = pcm[None].astype(np.float32)  # x.astype(np.float32) of the int16 samples, with a batch of one
    prep = {"kind": "audio", "sample_rate": 16000, "steps": steps}
    entry = {"name": "input", "dtype": "float32", "shape": [1, "samples"], "layout": "NT", "preprocessing": prep}
    case = {"name": "c", "inputs": {"input": stored}, "raw": {"input": tmp_path / "clip.wav"}}
    found = list(fidelity_stage(bundle_maker(tmp_path)([entry], [case])))
    assert [f.id for f in found] == [F.INPUTS_FIDELITY], [f.message for f in found]
    return str(found[0].details["explanation"])


def test_audio_declared_in_minus_one_to_one_without_its_scale_is_named(tmp_path: Path) -> None:
    explanation = _audio_explanation(tmp_path, [{"decode": {"library": "soundfile"}}, {"mix": "mono"}])
    assert explanation.startswith("with `scale: 32768` added after `mix: mono`"), explanation


def test_audio_scaled_by_32767_for_32768_is_named(tmp_path: Path) -> None:
    explanation = _audio_explanation(tmp_path, [{"decode": {}}, {"mix": "mono"}, {"scale": 32767}])
    assert explanation.startswith("with `scale: 32768` in place of `scale: 32767`"), explanation


# Text: an uncased BERT normalizer (lowercase, then accents stripped) that the tokenizer.json lacks.


def _plain_tokenizer(path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cafe", "creme", "au", "lait", "brulee"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.save(str(path))
    return path


@pytest.mark.parametrize(("text", "edits"), [("Cafe au Lait", 1), ("Café au lait, Crème Brûlée", 2)])
def test_lowercase_with_accents_stripped_is_named_by_both_edits(tmp_path: Path, text: str, edits: int) -> None:
    from tokenizers import Tokenizer, normalizers

    path = _plain_tokenizer(tmp_path / "tokenizer.json")
    application = Tokenizer.from_file(str(path))
    application.normalizer = normalizers.Sequence(
        [normalizers.Lowercase(), normalizers.NFD(), normalizers.StripAccents()]
    )  # as the application's tokenizer has it
    stored = np.asarray([application.encode(text).ids], np.int64)
    prep = {"kind": "text", "tokenizer": "tokenizer.json"}
    entry = {"name": "input_ids", "dtype": "int64", "shape": [1, "tokens"], "preprocessing": prep}
    case = {"name": "c", "inputs": {"input_ids": stored}, "raw": {"input_ids": text}}
    ctx = bundle_maker(tmp_path)([entry], [case], {"tokenizer.json": path.read_bytes()})
    (finding,) = list(fidelity_stage(ctx))
    explanation = finding.details["explanation"]
    assert explanation.startswith("with the text through `normalizers.Lowercase()` first"), explanation
    said = "and with the text through `normalizers.NFD()` and `StripAccents()` first" in explanation
    assert said == (edits == 2), explanation
