"""A Hugging Face preprocessor_config.json read into the manifest's fields, and the tensor it gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from prepkit import photo, pixels

from checker.preprocess.errors import CannotReproduce, PreprocessError
from checker.preprocess.image.build import build_image
from checker.preprocess.image.kind import KIND as IMAGE
from checker.preprocess.image.spec import ImageSpec, ShorthandCrop, ShorthandResize

HF = Path(__file__).parents[1] / "fixtures" / "preprocess" / "hf"
CHELSEA = photo("chelsea.png")  # 300 x 451


def spec_from(tmp_path: Path, config: dict | str, **explicit: object) -> ImageSpec:
    target = tmp_path / "preprocessor_config.json"
    if isinstance(config, str):
        shutil.copyfile(HF / config, target)
    else:
        target.write_text(json.dumps(config))
    return IMAGE.parse({"kind": "image", "config": "preprocessor_config.json", **explicit}, tmp_path)


def hf_reference(path: Path, resize_hw: tuple[int, int], resample: int, crop: int | None, cfg: dict) -> np.ndarray:
    """What an image processor does, step by step: PIL resize, crop at (h - ch) // 2, rescale, normalise, CHW."""
    with Image.open(path) as im:
        img = np.asarray(im.convert("RGB").resize(resize_hw[::-1], resample=resample))
    if crop is not None:
        top, left = (img.shape[0] - crop) // 2, (img.shape[1] - crop) // 2
        img = img[top : top + crop, left : left + crop]
    x = img.astype(np.float64) * cfg.get("rescale_factor", 1 / 255)
    x = (x - np.array(cfg["image_mean"])) / np.array(cfg["image_std"])
    return x.transpose(2, 0, 1)[None]


def test_legacy_clip_config(tmp_path: Path) -> None:
    spec = spec_from(tmp_path, "clip-vit-base-patch32.json")
    assert spec.resize == ShorthandResize("shorter_side", (224,), "bicubic", "pillow", "floor")
    assert spec.crop == ShorthandCrop("center", (224, 224))
    assert spec.scale == pytest.approx(1 / 255)
    assert spec.mean == pytest.approx((0.48145466, 0.4578275, 0.40821073))
    assert spec.color == "RGB"


def test_clip_round_trip_matches_the_processor_steps(tmp_path: Path) -> None:
    cfg = json.loads((HF / "image-processor-current.json").read_text())
    spec = spec_from(tmp_path, "image-processor-current.json")
    got = build_image(spec, CHELSEA, "NCHW", "float32")
    # shortest_edge 224: the long side is int(224 * 451 / 300) = 336 (truncated, where rounding gives 337)
    want = hf_reference(CHELSEA, (224, 336), Image.Resampling.BICUBIC, 224, cfg)
    assert got.shape == (1, 3, 224, 224)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_legacy_vit_config_is_a_square_resize_with_rescaling(tmp_path: Path) -> None:
    cfg = json.loads((HF / "vit-base-patch16-224.json").read_text())
    spec = spec_from(tmp_path, "vit-base-patch16-224.json")
    assert spec.resize == ShorthandResize("exact", (224, 224), "bilinear")
    assert spec.crop.mode == "none"
    got = build_image(spec, CHELSEA, "NCHW", "float32")
    np.testing.assert_allclose(got, hf_reference(CHELSEA, (224, 224), Image.Resampling.BILINEAR, None, cfg), atol=1e-5)


def test_convnext_crop_pct(tmp_path: Path) -> None:
    cfg = json.loads((HF / "resnet-50.json").read_text())
    spec = spec_from(tmp_path, "resnet-50.json")
    assert spec.resize == ShorthandResize("shorter_side", (256,), "bicubic", "pillow", "floor")  # 224 / 0.875
    assert spec.crop == ShorthandCrop("center", (224, 224))
    got = build_image(spec, CHELSEA, "NCHW", "float32")
    want = hf_reference(CHELSEA, (256, 384), Image.Resampling.BICUBIC, 224, cfg)  # int(256 * 451 / 300)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_flip_channel_order_means_bgr(tmp_path: Path) -> None:
    spec = spec_from(tmp_path, {"do_resize": False, "do_flip_channel_order": True, "do_rescale": True})
    assert spec.color == "BGR"
    got = build_image(spec, CHELSEA, "HWC", "float64")
    np.testing.assert_allclose(got, pixels(CHELSEA)[..., ::-1] / 255)


def test_disabled_steps_are_not_applied(tmp_path: Path) -> None:
    cfg = {"do_resize": False, "size": 224, "do_rescale": False, "do_normalize": False, "image_mean": [0.5]}
    spec = spec_from(tmp_path, cfg)
    assert (spec.resize.mode, spec.crop.mode, spec.scale, spec.mean, spec.std) == ("none", "none", 1, (0.0,), (1.0,))


def test_explicit_fields_override_the_config(tmp_path: Path) -> None:
    spec = spec_from(tmp_path, "clip-vit-base-patch32.json", resize={"interpolation": "bilinear"}, color="BGR")
    assert spec.resize.interpolation == "bilinear"
    assert spec.resize.mode == "shorter_side" and spec.resize.rounding == "floor"
    assert spec.color == "BGR"
    resized = spec_from(tmp_path, "clip-vit-base-patch32.json", resize={"mode": "shorter_side", "size": 256})
    assert resized.resize.rounding == "nearest"  # the manifest's own resize rounds as the manifest says


@pytest.mark.parametrize(
    ("cfg", "named"),
    [
        ({"do_pad": True, "size": {"height": 8, "width": 8}, "resample": 2}, "do_pad"),
        ({"size": {"height": 8, "width": 8}, "resample": 7}, "resample 7"),
        ({"size": {"shortest_edge": 800, "longest_edge": 1333}, "resample": 2}, "longest_edge"),
        ({"image_processor_type": "ViTImageProcessorFast", "size": 224, "resample": 2}, "torchvision"),
        ({"image_processor_type": "SomeImageProcessor", "size": 224, "resample": 2}, "square"),
        ({"size": {"height": 8, "width": 8}}, "resample None"),
        ({"image_processor_type": "LevitImageProcessor", "size": 224, "resample": 2, "crop_pct": 0.9}, "crop_pct"),
        ({"do_normalize": True, "image_mean": [0.5]}, "image_std"),
    ],
)
def test_settings_that_cannot_be_reproduced_are_refused(tmp_path: Path, cfg: dict, named: str) -> None:
    with pytest.raises(CannotReproduce, match=named):
        spec_from(tmp_path, cfg)


def test_a_refused_resize_is_lifted_by_an_explicit_resize(tmp_path: Path) -> None:
    cfg = {"size": {"shortest_edge": 800, "longest_edge": 1333}, "resample": 2}
    spec = spec_from(tmp_path, cfg, resize={"mode": "exact", "size": [64, 64]})
    assert spec.resize == ShorthandResize("exact", (64, 64), "bilinear")


def test_unreadable_or_outside_configs(tmp_path: Path) -> None:
    (tmp_path / "preprocessor_config.json").write_text("{not json")
    with pytest.raises(PreprocessError, match="JSON"):
        IMAGE.parse({"kind": "image", "config": "preprocessor_config.json"}, tmp_path)
    with pytest.raises(PreprocessError, match="bundle"):
        IMAGE.parse({"kind": "image", "config": "../preprocessor_config.json"}, tmp_path)
    with pytest.raises(PreprocessError, match="cannot be read"):
        IMAGE.parse({"kind": "image", "config": "missing.json"}, tmp_path)
