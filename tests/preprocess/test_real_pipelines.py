"""Real pipelines declared exactly as steps: the stored tensors are made by the packages' own preprocessing
code, run from the tests' cache (oracles.py; fetched by tests/fetch_models.py, else these tests skip), every
case has its raw file, and no tolerance is overridden. Then each single mistake in the manifest is planted, and
the explanation must name the edit that undoes it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from oracles import (
    ddddocr_classification,
    opencv_lanczos,
    rapidocr_classifier_batch,
    rapidocr_recognizer,
)
from PIL import Image
from prepkit import bundle_maker, changed, photo, pixels, without

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.checks.ranges import range_stage
from checker.findings import Finding

SCALE = 1 / 255
HALF = {"normalize": {"mean": [0.5], "std": [0.5]}}

CAPTCHA = [
    {"decode": {"mode": "RGB"}},
    {"resize": {"height": 64, "rounding": "floor", "arithmetic": "float_scale_first", "filter": "lanczos"}},
    {"convert": {"to": "L"}},
    {"scale": SCALE},
    {"layout": "NCHW"},
]
OCR_LINE = [
    {"decode": {"mode": "BGR"}},
    {"resize": {"ppocr_line": {"height": 48, "min_width": 320}, "library": "opencv", "filter": "linear"}},
    {"scale": SCALE},
    HALF,
    {"pad": {"at_least": [None, 320], "position": "top_left", "value": 0}},
    {"layout": "NCHW"},
]
ORIENTATION = [
    {"decode": {"mode": "BGR"}},
    {"resize": {"height": 48, "max_width": 192, "rounding": "ceil", "library": "opencv", "filter": "linear"}},
    {"scale": SCALE},
    HALF,
    {"pad": {"to": [48, 192], "position": "top_left", "value": 0}},
    {"batch": {"repeat": 3}},
    {"layout": "NCHW"},
]
LANCZOS = [
    {"decode": {"mode": "RGB", "library": "opencv"}},
    {"resize": {"size": [32, 32], "library": "opencv", "filter": "lanczos4"}},
    {"scale": SCALE},
    {"layout": "NCHW"},
]


def raw_image(tmp: Path, name: str, h: int, w: int, top: int = 60) -> Path:
    """A small RGB picture of h x w pixels cut from a real photograph."""
    arr = pixels(photo("chelsea.png"))[top : top + 120, 40 : 40 + 400]
    path = tmp / f"{name}.png"
    Image.fromarray(arr).resize((w, h), Image.Resampling.BOX).save(path)
    return path


# (steps, input shape, the package's preprocessing, raw images as (h, w))
PIPELINES: dict[str, tuple[list[dict[str, Any]], list[Any], Callable[[Path], np.ndarray], list[tuple[int, int]]]] = {
    # 49x98: int(98 * (64 / 49)) is 127 where the exact width is 128; 30x110: 234.67 is truncated to 234
    "captcha": (CAPTCHA, [1, 1, 64, "width"], ddddocr_classification, [(49, 98), (30, 110)]),
    # 96x320: shrunk to 160 wide, padded to 320; 60x480: 384 wide, wider than 320
    "ocr_line": (OCR_LINE, [1, 3, 48, "width"], rapidocr_recognizer, [(96, 320), (60, 480)]),
    # 25x70: 134.4 is ceil'd to 135; 20x100: 240, capped at 192
    "orientation": (ORIENTATION, [3, 3, 48, 192], rapidocr_classifier_batch, [(25, 70), (20, 100)]),
    "lanczos": (LANCZOS, [1, 3, 32, 32], opencv_lanczos, [(45, 60), (20, 33)]),
}


def check(tmp_path: Path, pipeline: str, steps: list[dict[str, Any]], ranges: bool = False) -> list[Finding]:
    _, shape, oracle, sizes = PIPELINES[pipeline]
    raws = [raw_image(tmp_path, f"raw{i}", h, w, 30 * i) for i, (h, w) in enumerate(sizes)]
    entry = {"name": "x", "dtype": "float32", "shape": shape, "preprocessing": {"kind": "image", "steps": steps}}
    cases = [{"name": f"c{i}", "inputs": {"x": oracle(raw)}, "raw": {"x": raw}} for i, raw in enumerate(raws)]
    ctx = bundle_maker(tmp_path)([entry], cases)
    return [*fidelity_stage(ctx), *(range_stage(ctx) if ranges else ())]


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_declared_exactly_and_rebuilt_without_a_tolerance(tmp_path: Path, pipeline: str) -> None:
    steps = PIPELINES[pipeline][0]
    assert all("tolerance" not in s for s in steps)
    # the range the steps imply (0-255 through scale, normalize and the pad value) holds too
    assert check(tmp_path, pipeline, steps, ranges=True) == []


def swapped(steps: list[dict[str, Any]], i: int) -> list[dict[str, Any]]:
    return [*steps[:i], steps[i + 1], steps[i], *steps[i + 2 :]]


MISTAKES = [
    # the captcha reader resizes and only then converts to grey
    ("captcha", swapped(CAPTCHA, 1), "when `resize: {height: 64, rounding: floor"),
    (
        "captcha",
        without(CAPTCHA, "resize", "rounding"),
        "when `resize` has `rounding: floor` (the manifest has half_up)",
    ),
    (
        "captcha",
        without(CAPTCHA, "resize", "arithmetic"),
        "when `resize` has `arithmetic: float_scale_first` (the manifest has exact)",
    ),
    (
        "captcha",
        without(CAPTCHA, "resize", "filter"),
        "when `resize` has `filter: lanczos` (the manifest has bilinear)",
    ),
    # the recogniser pads after normalising (with 0, a mid-grey), with OpenCV's linear filter
    ("ocr_line", swapped(OCR_LINE, 3), "when `normalize: {mean: [0.5], std: [0.5]}` runs before `pad`"),
    (
        "ocr_line",
        without(OCR_LINE, "resize", "library", "filter"),
        "when `resize` has `library: opencv, filter: linear` (the manifest has pillow, bilinear)",
    ),
    ("ocr_line", changed(OCR_LINE, "pad", value=-1), "when `pad` has `value: 0` (the manifest has -1)"),
    # the classifier feeds three copies of the crop, its width ceil'd
    ("orientation", [s for s in ORIENTATION if "batch" not in s], "with `batch: {repeat: 3}` added"),
    ("orientation", changed(ORIENTATION, "batch", repeat=2), "when `batch` has `repeat: 3` (the manifest has 2)"),
    (
        "orientation",
        changed(ORIENTATION, "resize", rounding="floor"),
        "when `resize` has `rounding: ceil` (the manifest has floor)",
    ),
    ("orientation", changed(ORIENTATION, "decode", mode="RGB"), "with channels reversed (BGR where RGB is declared)"),
    (
        "lanczos",
        changed(LANCZOS, "resize", library="pillow", filter="lanczos"),
        "when `resize` has `library: opencv, filter: lanczos4` (the manifest has pillow, lanczos)",
    ),
    ("lanczos", changed(LANCZOS, "decode", mode="BGR"), "with channels reversed (RGB where BGR is declared)"),
]


@pytest.mark.parametrize(("pipeline", "steps", "named"), MISTAKES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MISTAKES)])
def test_each_single_mistake_is_named(tmp_path: Path, pipeline: str, steps: list[dict[str, Any]], named: str) -> None:
    found = check(tmp_path, pipeline, steps)
    assert found, "the planted mistake went unnoticed"
    assert {f.id for f in found} == {F.INPUTS_FIDELITY}, [f.message for f in found]
    for finding in found:
        assert "the stored tensor matches the declared preprocessing" in finding.message, finding.message
        assert named in finding.message, finding.message


def test_the_implied_range_follows_the_steps(tmp_path: Path) -> None:
    raw = raw_image(tmp_path, "line", 96, 320)
    entry = {"name": "x", "dtype": "float32", "shape": [1, 3, 48, "width"]}
    entry["preprocessing"] = {"kind": "image", "steps": OCR_LINE}
    stored = (rapidocr_recognizer(raw) + 1) * 127.5  # left in 0-255
    ctx = bundle_maker(tmp_path)([entry], [{"name": "c", "inputs": {"x": stored}, "raw": {"x": raw}}])
    found = list(range_stage(ctx))
    assert [f.id for f in found] == [F.INPUTS_RANGE]
    assert "the declared steps" in found[0].message


def test_a_one_pixel_rounding_difference_is_named_not_a_letterbox(tmp_path: Path) -> None:
    """The shorthand rounds the computed width half up; the application truncates (234.67 -> 234)."""
    raw = raw_image(tmp_path, "line", 30, 110)
    with Image.open(raw) as im:
        grey = im.convert("L").resize((234, 64), Image.Resampling.LANCZOS)
    stored = (np.asarray(grey, np.float32) / 255)[None, None]
    prep = {"kind": "image", "color": "GRAY", "scale": SCALE}
    prep["resize"] = {"mode": "fixed_height", "size": [64, 400], "interpolation": "lanczos"}
    entry = {"name": "x", "dtype": "float32", "shape": [1, 1, 64, "width"], "layout": "NCHW", "preprocessing": prep}
    ctx = bundle_maker(tmp_path)([entry], [{"name": "c", "inputs": {"x": stored}, "raw": {"x": raw}}])
    (finding,) = fidelity_stage(ctx)
    assert "has shape [1, 1, 64, 235], the stored tensor [1, 1, 64, 234]" in finding.message
    explanation = finding.details["explanation"]
    assert explanation.startswith("when `resize` has `rounding: floor` (the manifest has half_up)"), explanation
    # A letterbox to 64x234 pads nothing here, so it builds the very same tensor: named with it, never before it
    assert "letterbox" not in explanation.split("the very same tensor", 1)[0]


def test_a_missing_library_is_not_rebuilt_naming_its_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)  # as on a machine without OpenCV: no fallback to Pillow
    (finding,) = check(tmp_path, "lanczos", LANCZOS)
    assert finding.id == F.INPUTS_NOT_REBUILT
    assert finding.details["extra"] == "opencv"
    assert "pip install 'onnx-release-checker[opencv]'" in finding.message
