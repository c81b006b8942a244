"""inputs.fidelity on real bundles: stored tensors made by application-style code, with and without mistakes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from prepkit import BundleMaker, bundle_maker, photo, pixels, write_tokenizer
from tokenizers import Tokenizer

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.context import Context
from checker.findings import Finding, Severity
from checker.manifest.model.build import build
from checker.manifest.model.root import Spec

CHELSEA = photo("chelsea.png")  # 300 x 451
COFFEE = photo("coffee.png")  # 400 x 600
MEAN, STD = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
IMAGE_PREP = {
    "kind": "image",
    "color": "RGB",
    "resize": {"mode": "shorter_side", "size": 146, "interpolation": "bilinear"},
    "crop": {"mode": "center", "size": [128, 128]},
    "scale": 1 / 255,
    "mean": MEAN.tolist(),
    "std": STD.tolist(),
}
IMAGE_INPUT = {"name": "pixel_values", "dtype": "float32", "shape": [1, 3, 128, 128], "layout": "NCHW"}


@pytest.fixture
def make_bundle(tmp_path: Path) -> BundleMaker:
    return bundle_maker(tmp_path)


@pytest.fixture
def tokenizer(tmp_path: Path) -> Path:
    return write_tokenizer(tmp_path / "tokenizer.json")


def app_tensor(
    path: Path,
    bgr: bool = False,
    scale: float = 1 / 255,
    letterbox: bool = False,
    exif: bool = True,
    torchvision_crop: bool = False,
) -> np.ndarray:
    """What an application would write: Pillow for the pixels, NumPy for the rest (not checker.preprocess)."""
    with Image.open(path) as im:
        from PIL import ImageOps

        img = (ImageOps.exif_transpose(im) if exif else im).convert("RGB")
    w, h = img.size
    if letterbox:
        r = min(128 / h, 128 / w)
        nh, nw = round(h * r), round(w * r)
        canvas = np.full((128, 128, 3), 114, np.uint8)
        top, left = (128 - nh) // 2, (128 - nw) // 2
        canvas[top : top + nh, left : left + nw] = np.asarray(img.resize((nw, nh), Image.Resampling.BILINEAR))
        arr = canvas
    else:
        s = 146 / min(h, w)
        arr = np.asarray(img.resize((round(w * s), round(h * s)), Image.Resampling.BILINEAR))
        top, left = (arr.shape[0] - 128) // 2, (arr.shape[1] - 128) // 2
        if torchvision_crop:  # torchvision: int(round((w - crop) / 2)), half to even
            top, left = round((arr.shape[0] - 128) / 2), round((arr.shape[1] - 128) / 2)
        arr = arr[top : top + 128, left : left + 128]
    if bgr:
        arr = arr[..., ::-1]
    x = (arr * scale - MEAN) / STD
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def image_ctx(make_bundle: BundleMaker, stored: dict[str, np.ndarray], prep: dict | None = None) -> Context:
    entry = {**IMAGE_INPUT, "preprocessing": prep or IMAGE_PREP}
    raws = {"cat": CHELSEA, "coffee": COFFEE}
    cases = [{"name": n, "inputs": {"pixel_values": a}, "raw": {"pixel_values": raws[n]}} for n, a in stored.items()]
    return make_bundle([entry], cases)


def only(findings: list[Finding], fid: str = F.INPUTS_FIDELITY) -> Finding:
    assert [f.id for f in findings] == [fid], [f.message for f in findings]
    return findings[0]


def test_faithful_cases_give_no_finding(make_bundle: BundleMaker) -> None:
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA), "coffee": app_tensor(COFFEE)})
    assert list(fidelity_stage(ctx)) == []


def test_bgr_stored_while_rgb_is_declared(make_bundle: BundleMaker) -> None:
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA), "coffee": app_tensor(COFFEE, bgr=True)})
    finding = only(list(fidelity_stage(ctx)))
    assert finding.severity is Severity.ERROR
    assert "case 'coffee', input 'pixel_values'" in finding.message
    assert "the stored tensor matches the declared preprocessing with channels reversed" in finding.message
    assert finding.details["explanation"].startswith("with channels reversed (BGR where RGB is declared)")
    assert finding.details["largest_difference"] > finding.details["tolerance"]
    assert len(finding.details["index"]) == 4
    assert finding.file == "bundle.yaml"
    assert finding.line == ctx.manifest.line("comparison", "cases", 1, "raw", "pixel_values")


def test_0_255_stored_while_0_1_is_declared(make_bundle: BundleMaker) -> None:
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA, scale=1.0)})
    finding = only(list(fidelity_stage(ctx)))
    assert "with pixel values in 0-255 where 0-1 is declared" in finding.message
    assert f"tolerance {2 / 255 / 0.224:.4g}" in finding.message


def test_letterboxed_while_center_crop_is_declared(make_bundle: BundleMaker) -> None:
    ctx = image_ctx(make_bundle, {"coffee": app_tensor(COFFEE, letterbox=True)})
    finding = only(list(fidelity_stage(ctx)))
    assert "matches the declared preprocessing letterboxed to 128x128 (pad value 114)" in finding.message
    assert "shorter side resize to 146, center crop 128x128 is declared" in finding.message


def test_torchvision_center_crop_offset(make_bundle: BundleMaker) -> None:
    # chelsea resizes to 146x219: 91 columns to crop, so floor gives 45 on the left and torchvision 46
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA, torchvision_crop=True)})
    finding = only(list(fidelity_stage(ctx)))
    assert (
        "offset rounded half to even, and an odd padding row or column after the image, as torchvision's"
        in finding.message
    )


def test_exif_orientation_ignored_by_the_application(make_bundle: BundleMaker, tmp_path: Path) -> None:
    rotated = tmp_path / "rotated.png"
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(pixels(COFFEE)).save(rotated, exif=exif)
    entry = {**IMAGE_INPUT, "preprocessing": IMAGE_PREP}
    case = {
        "name": "turned",
        "inputs": {"pixel_values": app_tensor(rotated, exif=False)},
        "raw": {"pixel_values": rotated},
    }
    finding = only(list(fidelity_stage(make_bundle([entry], [case]))))
    assert "with the EXIF orientation ignored (the file's tag is 6)" in finding.message


def test_nhwc_stored_while_nchw_is_declared(make_bundle: BundleMaker) -> None:
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA).transpose(0, 2, 3, 1)})
    finding = only(list(fidelity_stage(ctx)))
    assert "has shape [1, 3, 128, 128], the stored tensor [1, 128, 128, 3]" in finding.message
    assert "in NHWC layout where NCHW is declared" in finding.message
    assert finding.details["stored_shape"] == [1, 128, 128, 3]


def test_an_empty_stored_tensor_is_a_shape_difference(make_bundle: BundleMaker) -> None:
    finding = only(list(fidelity_stage(image_ctx(make_bundle, {"cat": np.zeros((1, 3, 0, 0), np.float32)}))))
    assert finding.details["stored_shape"] == [1, 3, 0, 0]
    assert finding.details["explanation"] is None


def test_an_unexplained_difference_says_so(make_bundle: BundleMaker) -> None:
    noise = np.random.default_rng(0).normal(size=(1, 3, 128, 128)).astype(np.float32)
    finding = only(list(fidelity_stage(image_ctx(make_bundle, {"cat": noise}))))
    assert "no single usual mistake" in finding.message
    assert finding.details["explanation"] is None


def test_nan_in_the_stored_tensor_is_a_difference(make_bundle: BundleMaker) -> None:
    stored = app_tensor(CHELSEA)
    stored[0, 1, 2, 3] = np.nan
    finding = only(list(fidelity_stage(image_ctx(make_bundle, {"cat": stored}))))
    assert finding.details["index"] == [0, 1, 2, 3]
    assert finding.details["largest_difference"] == "inf"


def test_a_custom_tolerance_is_honoured(make_bundle: BundleMaker) -> None:
    shifted = app_tensor(CHELSEA) + 0.05
    assert list(fidelity_stage(image_ctx(make_bundle, {"cat": shifted}, {**IMAGE_PREP, "tolerance": 0.06}))) == []
    assert len(list(fidelity_stage(image_ctx(make_bundle, {"cat": shifted}, {**IMAGE_PREP, "tolerance": 0.04})))) == 1


# Text


def text_ctx(make_bundle: BundleMaker, tokenizer: Path, stored_text: str, text: str = "The cat sat") -> Context:
    prep = {"kind": "text", "tokenizer": "tokenizer.json", "template": "query: {text}", "max_length": 16}
    prep |= {"padding": "max_length", "truncation": True}
    mask = {"kind": "derived", "from": "input_ids", "field": "attention_mask"}
    inputs = [
        {"name": "input_ids", "dtype": "int64", "shape": ["batch", 16], "preprocessing": prep},
        {"name": "attention_mask", "dtype": "int64", "shape": ["batch", 16], "preprocessing": mask},
    ]
    tok = Tokenizer.from_file(str(tokenizer))  # the application's own tokenization, padded by hand
    enc = tok.encode(stored_text)
    ids = np.zeros((1, 16), np.int64)
    ids[0, : len(enc.ids)] = enc.ids
    stored = {"input_ids": ids, "attention_mask": (ids != 0).astype(np.int64)}
    case = {"name": "q1", "inputs": stored, "raw": {"input_ids": text + "\n"}}
    return make_bundle(inputs, [case], files={"tokenizer.json": tokenizer.read_text()})


def test_text_tokenized_as_declared(make_bundle: BundleMaker, tokenizer: Path) -> None:
    assert list(fidelity_stage(text_ctx(make_bundle, tokenizer, "query: The cat sat"))) == []


def test_text_tokenized_without_the_template(make_bundle: BundleMaker, tokenizer: Path) -> None:
    (finding,) = fidelity_stage(text_ctx(make_bundle, tokenizer, "The cat sat"))
    assert finding.id == F.INPUTS_FIDELITY and finding.details["input"] == "input_ids"
    assert "tokenized as declared differs from the stored tensor" in finding.message
    assert "the stored tensor matches the declared tokenization without the template" in finding.message
    assert finding.details["index"] == [0, 1]  # the first token after [CLS]
    assert finding.details["derived"] == ["attention_mask"]  # it differs for the same reason: named, not repeated


SENTENCES = [
    "the cat sat on the mat",
    "a dog ran in the park",
    "the bird sang at dawn",
    "she read the old book",
    "we walked to the river",
]


def derived_ctx(make_bundle: BundleMaker, tokenizer: Path, stored_length: int, declared_length: int) -> Context:
    """15 cases of one text input and its attention_mask and token_type_ids, the stored tensors made by the
    tokenizers library itself, padded and truncated to `stored_length`."""
    prep = {"kind": "text", "tokenizer": "tokenizer.json", "max_length": declared_length}
    prep |= {"padding": "max_length", "truncation": True}
    inputs: list[dict[str, Any]] = [{"name": "input_ids", "dtype": "int64", "preprocessing": prep}]
    for name, fld in (("attention_mask", "attention_mask"), ("token_type_ids", "type_ids")):
        derived = {"kind": "derived", "from": "input_ids", "field": fld}
        inputs.append({"name": name, "dtype": "int64", "preprocessing": derived})
    tok = Tokenizer.from_file(str(tokenizer))
    tok.enable_truncation(stored_length)
    tok.enable_padding(length=stored_length, pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    cases = []
    for i in range(15):
        text = f"{SENTENCES[i % 5]} {'again ' * (i // 5)}".strip()
        enc = tok.encode(text)
        stored = {
            "input_ids": np.array([enc.ids], np.int64),
            "attention_mask": np.array([enc.attention_mask], np.int64),
            "token_type_ids": np.array([enc.type_ids], np.int64),
        }
        cases.append({"name": f"q{i}", "inputs": stored, "raw": {"input_ids": text}})
    return make_bundle(inputs, cases, files={"tokenizer.json": tokenizer.read_text()})


def test_a_wrong_max_length_is_one_finding_per_case_naming_its_derived_inputs(
    make_bundle: BundleMaker, tokenizer: Path
) -> None:
    findings = list(fidelity_stage(derived_ctx(make_bundle, tokenizer, stored_length=16, declared_length=12)))
    assert [f.details["case"] for f in findings] == [f"q{i}" for i in range(15)]  # not 45
    for finding in findings:
        assert finding.details["input"] == "input_ids"
        assert finding.details["derived"] == ["attention_mask", "token_type_ids"]
        assert "has shape [1, 12], the stored tensor [1, 16]" in finding.message
        assert "derived from its tokens, 'attention_mask', 'token_type_ids', differ" in finding.message


def test_a_derived_input_that_differs_alone_is_its_own_finding(make_bundle: BundleMaker, tokenizer: Path) -> None:
    ctx = derived_ctx(make_bundle, tokenizer, stored_length=16, declared_length=16)
    assert list(fidelity_stage(ctx)) == []
    assert ctx.cases is not None
    ctx.cases[0].inputs["token_type_ids"] = np.ones((1, 16), np.int64)  # a second segment the tokenizer never made
    (finding,) = fidelity_stage(ctx)
    assert finding.details["input"] == "token_type_ids" and "derived" not in finding.details


def test_text_with_the_file_line_break(make_bundle: BundleMaker, tokenizer: Path) -> None:
    # The whitespace pre-tokenizer ignores a line break: the rebuilt ids agree either way.
    assert list(fidelity_stage(text_ctx(make_bundle, tokenizer, "query: The cat sat\n"))) == []


def test_tokenizer_failing_its_digest_is_left_to_the_digest_check(make_bundle: BundleMaker, tokenizer: Path) -> None:
    ctx = text_ctx(make_bundle, tokenizer, "The cat sat")
    ctx.data["inputs"][0]["preprocessing"]["tokenizer_sha256"] = "0" * 64
    ctx.spec = build(Spec, ctx.data)  # the typed manifest, made again with the edited digest
    ctx.digests["tokenizer.json"] = "1" * 64
    assert list(fidelity_stage(ctx)) == []


# What is not rebuilt, and why


def test_a_refused_config_file_is_left_to_the_files_check(make_bundle: BundleMaker) -> None:
    prep = {"kind": "image", "config": "preprocessor_config.json"}
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA)}, prep)
    ctx.unusable.add("preprocessor_config.json")
    assert list(fidelity_stage(ctx)) == []
    ctx.unusable.clear()
    finding = only(list(fidelity_stage(ctx)))  # without the files check's verdict, it is reported here
    assert "preprocessor_config.json cannot be read" in finding.message


def test_without_pillow_a_warning_names_the_extra(make_bundle: BundleMaker, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA), "coffee": app_tensor(COFFEE)})
    monkeypatch.setitem(sys.modules, "PIL", None)
    finding = only(list(fidelity_stage(ctx)), F.INPUTS_NOT_REBUILT)
    assert finding.severity is Severity.WARNING
    assert "pip install 'onnx-release-checker[image]'" in finding.message


def test_without_tokenizers_a_warning_names_the_extra(
    make_bundle: BundleMaker, tokenizer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = text_ctx(make_bundle, tokenizer, "query: The cat sat")
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    finding = only(list(fidelity_stage(ctx)), F.INPUTS_NOT_REBUILT)
    assert "onnx-release-checker[text]" in finding.message


def test_an_opencv_resize_is_reported_as_not_reproduced(
    make_bundle: BundleMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)  # as on a machine without OpenCV
    prep = {**IMAGE_PREP, "resize": {**IMAGE_PREP["resize"], "library": "opencv"}}
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA), "coffee": app_tensor(COFFEE)}, prep)
    finding = only(list(fidelity_stage(ctx)), F.INPUTS_NOT_REBUILT)  # once for the input, not per case
    assert "OpenCV is not installed" in finding.message
    assert finding.line == ctx.manifest.line("inputs", 0, "preprocessing")


def test_an_invalid_preprocessing_is_reported_once(make_bundle: BundleMaker) -> None:
    ctx = image_ctx(
        make_bundle, {"cat": app_tensor(CHELSEA), "coffee": app_tensor(COFFEE)}, {**IMAGE_PREP, "mean": [0.5, 0.5]}
    )
    finding = only(list(fidelity_stage(ctx)))
    assert "input 'pixel_values': the declared preprocessing cannot be applied" in finding.message
    assert "mean has 2 values; RGB has 3 channel(s)" in finding.message


def test_an_undecodable_raw_file_is_an_error_of_its_case(make_bundle: BundleMaker, tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n broken")
    entry = {**IMAGE_INPUT, "preprocessing": IMAGE_PREP}
    case = {"name": "bad", "inputs": {"pixel_values": app_tensor(CHELSEA)}, "raw": {"pixel_values": broken}}
    finding = only(list(fidelity_stage(make_bundle([entry], [case]))))
    assert "case 'bad', input 'pixel_values': the raw input cannot be preprocessed as declared" in finding.message


def test_raw_for_an_unknown_input(make_bundle: BundleMaker) -> None:
    ctx = image_ctx(make_bundle, {"cat": app_tensor(CHELSEA)})
    assert ctx.cases is not None
    ctx.cases[0].raw["pixels"] = ctx.cases[0].raw["pixel_values"]
    finding = only(list(fidelity_stage(ctx)))
    assert "raw names 'pixels', which is not one of the manifest's inputs" in finding.message


def test_audio_raw_files_are_kept_not_rebuilt(make_bundle: BundleMaker) -> None:
    entry = {"name": "samples", "dtype": "float32", "preprocessing": {"kind": "audio", "sample_rate": 16000}}
    case = {"name": "clip", "inputs": {"samples": np.zeros((1, 10), np.float32)}, "raw": {"samples": "not audio"}}
    assert list(fidelity_stage(make_bundle([entry], [case]))) == []


def test_no_cases_no_findings(make_bundle: BundleMaker) -> None:
    ctx = image_ctx(make_bundle, {"cat": np.zeros((1, 3, 128, 128), np.float32)})
    ctx.cases = None
    assert list(fidelity_stage(ctx)) == []


def test_a_search_cut_by_its_time_bound_says_so(make_bundle: BundleMaker, monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.preprocess import search as explain

    monkeypatch.setattr(explain, "TIME_BOUND_SECONDS", 0.0)
    noise = np.random.default_rng(0).normal(size=(1, 3, 128, 128)).astype(np.float32)
    finding = only(list(fidelity_stage(image_ctx(make_bundle, {"cat": noise}))))
    assert "reached its time bound (0 s) before trying any" in finding.message
    assert "the rest were not tried" in finding.message
    assert "no single usual mistake" not in finding.message
