"""The step list: parsing, the size rules with their rounding and arithmetic, pad and crop, batch and
layout, and the shorthand fields' expansion."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from prepkit import photo, pixels

from checker.cli import main
from checker.preprocess.errors import MissingLibrary, PreprocessError
from checker.preprocess.image import geometry
from checker.preprocess.image.decode import decode
from checker.preprocess.image.kind import KIND as IMAGE
from checker.preprocess.image.pipeline import run
from checker.preprocess.image.shorthand import expand
from checker.preprocess.image.spec import parse_image
from checker.preprocess.image.steps import Crop, Pad, Resize, parse_steps

CHELSEA = photo("chelsea.png")  # 300 x 451


def build(steps: list[dict[str, Any]], path: Path = CHELSEA, layout: str = "HWC", dtype: str = "float32") -> np.ndarray:
    return run(parse_steps(steps), decode(path, path.name), layout, dtype)


def test_a_block_has_steps_or_shorthand_not_both() -> None:
    with pytest.raises(
        PreprocessError,
        match=r"preprocessing: \{'kind': 'image', 'steps': \[\{'scale': 2\}\], 'scale': 2\} should not be valid",
    ):
        IMAGE.parse({"kind": "image", "steps": [{"scale": 2}], "scale": 2}, Path("."))


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"scale": 1}, {"decode": {}}], "decode must be the first step"),
        ([{"blur": 3}], r"steps\[0\]\.blur: unknown field 'blur'"),
        ([{"resize": {"height": 4, "width": 4}}], "exactly one geometry"),
        ([{"resize": {"size": 4, "filter": "lanczos4"}}], "filter is 'lanczos4'"),
        ([{"resize": {"size": 4, "library": "opencv", "filter": "lanczos"}}], "filter is 'lanczos'"),
        ([{"pad": {"to": [4, 4], "at_least": [4, 4]}}], "exactly one of to, at_least"),
        ([{"batch": {"repeat": 1000}}], "repeat: 1000 is greater than the maximum of 64"),
        ([{"resize": {"size": 4, "antialias": False}}], "only chosen for torchvision"),
        ([], "preprocessing.steps: \\[\\] should be non-empty"),
    ],
)
def test_invalid_steps_are_named(steps: list[Any], message: str) -> None:
    with pytest.raises(PreprocessError, match=message):
        parse_steps(steps)


def test_the_computed_width_follows_rounding_and_arithmetic() -> None:
    def width(**kw: Any) -> int:
        return geometry.resize_size(Resize(height=64, **kw), 49, 98)[1]

    assert width() == 128  # exact: 98 * 64 / 49 is 128
    assert width(rounding="floor", arithmetic="float_scale_first") == 127  # int(98 * (64 / 49))
    assert width(rounding="floor", arithmetic="float_product_first") == 128
    # 110 * 64 / 30 = 234.67
    assert geometry.resize_size(Resize(height=64, rounding="floor"), 30, 110) == (64, 234)
    assert geometry.resize_size(Resize(height=64, rounding="ceil"), 30, 110) == (64, 235)
    # 2.5 rounds to 2 half to even and to 3 half up
    assert geometry.resize_size(Resize(scale=0.5, rounding="half_even"), 5, 5) == (2, 2)
    assert geometry.resize_size(Resize(scale=0.5), 5, 5) == (3, 3)


def test_the_size_rules() -> None:
    assert geometry.resize_size(Resize(shorter_side=100, max_longer=120), 200, 400) == (60, 120)
    assert geometry.resize_size(Resize(shorter_side=100), 200, 400) == (100, 200)
    assert geometry.resize_size(Resize(longer_side=100), 200, 400) == (50, 100)
    assert geometry.resize_size(Resize(width=50, max_height=20), 200, 400) == (20, 50)
    assert geometry.resize_size(Resize(height=48, min_width=100), 48, 30) == (48, 100)
    assert geometry.resize_size(Resize(fit=(64, 64)), 200, 400) == (32, 64)
    assert geometry.resize_size(Resize(shorter_side=100, multiple_of=32, rounding="floor"), 200, 300) == (96, 128)
    # PaddleOCR: ceil while the line fits in min_width, floor beyond it
    assert geometry.resize_size(Resize(ppocr_line=(48, 320)), 30, 100) == (48, 160)
    assert geometry.resize_size(Resize(ppocr_line=(48, 320)), 7, 50) == (
        48,
        342,
    )  # 342.86: floor, as wide as the tensor
    assert geometry.resize_size(Resize(ppocr_line=(48, 320)), 7, 46) == (48, 316)  # 315.43, ceil 316


def test_pad_positions_at_least_and_odd_remainders() -> None:
    img = np.ones((2, 3, 1), np.uint8)
    out = geometry.pad(img, Pad(at_least=(None, 6), position="top_left", value=(9.0,)))
    assert out.shape == (2, 6, 1) and out[0, :, 0].tolist() == [1, 1, 1, 9, 9, 9]
    assert geometry.pad(img, Pad(at_least=(None, 2))).shape == (2, 3, 1)  # a wider image is left alone
    centred = geometry.pad(img, Pad(to=(2, 6)))[0, :, 0].tolist()
    assert centred == [0, 1, 1, 1, 0, 0]  # odd: end puts the odd column after the content
    assert geometry.pad(img, Pad(to=(2, 6), odd="start"))[0, :, 0].tolist() == [0, 0, 1, 1, 1, 0]
    assert geometry.pad(img, Pad(to=(2, 6), position="right"))[0, :, 0].tolist() == [0, 0, 0, 1, 1, 1]
    assert geometry.pad(img, Pad(multiple_of=4)).shape == (4, 4, 1)
    assert geometry.pad(img, Pad(to=(2, 4), value=(0.5,))).dtype == np.float32  # not a uint8 value


def test_crop_offsets_and_box() -> None:
    img = np.arange(5 * 5).reshape(5, 5, 1)
    assert geometry.crop(img, Crop(center=(2, 2)))[..., 0].tolist() == [[6, 7], [11, 12]]
    # (5 - 2) / 2 = 1.5 rounds half to even to 2
    assert geometry.crop(img, Crop(center=(2, 2), offset_rounding="half_even"))[..., 0].tolist() == [[12, 13], [17, 18]]
    assert geometry.crop(img, Crop(box=(1, 2, 1, 2)))[..., 0].tolist() == [[7, 8]]
    with pytest.raises(PreprocessError, match="smaller than the 6x6 crop"):
        geometry.crop(img, Crop(center=(6, 6)))
    assert geometry.crop(img, Crop(center=(6, 6), pad_if_smaller=(0.0,))).shape == (6, 6, 1)


def test_resize_then_grey_is_not_grey_then_resize() -> None:
    resize = {"resize": {"height": 64, "filter": "lanczos"}}
    first = build([{"decode": {"mode": "RGB"}}, resize, {"convert": {"to": "L"}}])
    then = build([{"decode": {"mode": "RGB"}}, {"convert": {"to": "L"}}, resize])
    with Image.open(CHELSEA) as im:
        rgb = im.convert("RGB")
        want = np.asarray(rgb.resize(rgb.size and (96, 64), Image.Resampling.LANCZOS).convert("L"), np.float32)
    np.testing.assert_array_equal(first[..., 0], want)
    assert np.abs(first - then).max() >= 1


def test_batch_repeat_and_layout() -> None:
    steps = [{"resize": {"size": [8, 8]}}, {"batch": {"repeat": 3}}, {"layout": "NCHW"}, {"cast": "uint8"}]
    out = build(steps, layout="NHWC")
    assert out.shape == (3, 3, 8, 8)
    assert out.dtype == np.float32  # the input's dtype comes last
    assert (out[0] == out[2]).all()
    with pytest.raises(PreprocessError, match="no batch axis"):
        build([{"batch": {"repeat": 2}}], layout="CHW")


def test_a_step_after_layout_is_refused() -> None:
    with pytest.raises(PreprocessError, match="only cast may follow"):
        build([{"layout": "CHW"}, {"scale": 2}])


def test_normalize_uses_the_current_channel_order() -> None:
    out = build([{"decode": {"mode": "BGR"}}, {"normalize": {"mean": [1, 2, 3], "std": [1, 1, 1]}}])
    want = pixels(CHELSEA)[..., ::-1].astype(np.float32) - np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(out, want)


def test_opencv_grey_formula_differs_from_pillows() -> None:
    pil = build([{"convert": {"to": "L", "formula": "pillow"}}])
    cv = build([{"convert": {"to": "L", "formula": "opencv"}}])
    np.testing.assert_array_equal(pil[..., 0], pixels(CHELSEA, "L"))
    assert np.abs(pil - cv).max() <= 1


def test_a_missing_library_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(MissingLibrary, match=r"onnx-release-checker\[opencv\]"):
        build([{"resize": {"size": [8, 8], "library": "opencv"}}])
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.transforms.v2.functional", None)
    with pytest.raises(MissingLibrary, match=r"onnx-release-checker\[torch\]"):
        build([{"resize": {"size": [8, 8], "library": "torchvision"}}])


def test_torchvision_resize_as_torchvision_does() -> None:
    functional = pytest.importorskip("torchvision.transforms.v2.functional")
    torch = pytest.importorskip("torch")
    out = build([{"resize": {"size": [40, 60], "library": "torchvision", "antialias": True}}], dtype="uint8")
    x = torch.from_numpy(pixels(CHELSEA).copy()).permute(2, 0, 1)
    want = functional.resize(x, [40, 60], antialias=True).permute(1, 2, 0).numpy()
    np.testing.assert_array_equal(out, want)


def test_shorthand_expands_to_steps() -> None:
    spec = parse_image(
        {
            "color": "BGR",
            "resize": {"mode": "shorter_side", "size": 146, "library": "opencv", "interpolation": "bicubic"},
            "crop": {"mode": "center", "size": [128, 128]},
            "scale": 1 / 255,
            "mean": [0.5],
            "std": [0.5],
        }
    )
    words = [s.words() for s in expand(spec)]
    assert words == [
        "decode: {mode: BGR, exif: true}",
        "resize: {shorter_side: 146, filter: cubic, library: opencv}",
        "crop: {center: [128, 128], pad_if_smaller: [0]}",
        "scale: 0.003921568627",
        "normalize: {mean: [0.5], std: [0.5]}",
    ]


def test_show_steps_prints_the_expansion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prep = {"kind": "image", "resize": {"mode": "fixed_height", "size": [32, 100]}, "scale": 0.5}
    steps = {"kind": "image", "steps": [{"decode": {"mode": "L"}}, {"pad": {"at_least": [None, 64]}}]}
    inputs = [
        {"name": "a", "dtype": "float32", "layout": "NCHW", "preprocessing": prep},
        {"name": "b", "dtype": "uint8", "layout": "NHW", "preprocessing": steps},
    ]
    (tmp_path / "bundle.yaml").write_text(json.dumps({"manifest_version": 1, "inputs": inputs}))
    assert main(["preprocess", str(tmp_path), "--show-steps"]) == 0
    out = capsys.readouterr().out
    assert "    - resize: {height: 32, max_width: 100, filter: bilinear}" in out
    assert "    - layout: NCHW  # the input's layout" in out
    assert "  # declared steps\n  steps:\n    - decode: {mode: L}\n    - pad: {at_least: [null, 64], value: 0}" in out
    assert "cast to the input's dtype, uint8" in out


def test_a_batch_is_bounded() -> None:
    with pytest.raises(PreprocessError, match="more than"):
        build([{"resize": {"size": [2048, 2048]}}, {"batch": {"repeat": 8}}], layout="NHWC")


def manifest_errors(prep: dict[str, Any]) -> list[str]:
    from jsonschema import Draft202012Validator

    from checker.manifest.schema import load

    entry = {"name": "x", "dtype": "float32", "shape": [1, 3, 48, "width"], "preprocessing": prep}
    doc = {"manifest_version": 1, "inputs": [entry]}
    errors = Draft202012Validator(load("manifest")).iter_errors(doc)
    return [e.json_path for e in errors if "preprocessing" in e.json_path]


def test_the_schema_takes_steps_and_refuses_both_forms() -> None:
    steps = [
        {"decode": {"mode": "BGR", "library": "opencv"}},
        {"resize": {"ppocr_line": {"height": 48, "min_width": 320}, "library": "opencv", "filter": "linear"}},
        {"scale": 0.00392156862745098},
        {"normalize": {"mean": [0.5], "std": [0.5]}},
        {"pad": {"at_least": [None, 320], "position": "top_left", "value": 0}},
        {"batch": {"repeat": 1}},
        {"layout": "NCHW"},
    ]
    assert manifest_errors({"kind": "image", "steps": steps}) == []
    assert manifest_errors({"kind": "image", "import": {"format": "openvino", "path": "ac.yml"}}) == []
    assert manifest_errors({"kind": "image", "steps": steps, "scale": 1}) != []
    assert manifest_errors({"kind": "image", "steps": [{"blur": 3}]}) != []
    assert manifest_errors({"kind": "image", "steps": [{"scale": 1, "cast": "uint8"}]}) != []


def test_alpha_is_dropped_or_composited(tmp_path: Path) -> None:
    rgba = np.zeros((4, 4, 4), np.uint8)
    rgba[..., 0] = 200  # red, fully transparent
    path = tmp_path / "clear.png"
    Image.fromarray(rgba, "RGBA").save(path)
    dropped = build([{"decode": {"mode": "RGB"}}], path, dtype="uint8")
    pasted = build([{"decode": {"mode": "RGB", "alpha": {"composite": [255, 255, 255]}}}], path, dtype="uint8")
    assert dropped[0, 0].tolist() == [200, 0, 0]
    assert pasted[0, 0].tolist() == [255, 255, 255]
