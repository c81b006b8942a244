"""Albumentations 2.x as its own oracle: pipelines saved with its `A.save`, imported by the checker, must rebuild
the tensor Albumentations itself makes from real photographs; what its files say that the steps cannot (an
option that changes the image) is refused by the option's name, and the refusal is a check not run.

ToTensorV2 lives in `albumentations.pytorch`, which needs torch; the checker reads it as the input's layout, so
the tests transpose Albumentations' HWC output to NCHW as the layout does.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import yaml
from PIL import Image
from prepkit import bundle_maker, photo, pixels

from checker.checks.fidelity import fidelity_stage
from checker.preprocess.errors import CannotReproduce
from checker.preprocess.image.importers import read_pipeline

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # its import would otherwise ask PyPI for a newer version
import albumentations as A

# Real photographs at sizes that make odd paddings and crops: (photo, rows, columns) of a cut-out.
PHOTOS = [("chelsea.png", slice(0, 300), slice(0, 451)), ("astronaut.png", slice(37, 250), slice(0, 512))]
PHOTOS += [("coffee.png", slice(0, 400), slice(101, 300)), ("motorcycle_left.png", slice(0, 501), slice(0, 741))]


def pipelines() -> dict[str, Any]:
    """Realistic classification and detection pipelines, as their authors would write them in Albumentations 2."""
    return {
        "letterbox": A.Compose(
            [
                A.LongestMaxSize(max_size=96),
                A.PadIfNeeded(min_height=96, min_width=96, border_mode=cv2.BORDER_CONSTANT, fill=0),
                A.CenterCrop(height=88, width=88),
                A.Normalize(),
            ]
        ),
        "shorter-side-crop": A.Compose(
            [
                A.SmallestMaxSize(max_size=80, interpolation=cv2.INTER_AREA),
                A.CenterCrop(height=72, width=64),
                A.Normalize(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)),
            ]
        ),
        "crop-pads-small-images": A.Compose(
            [
                A.LongestMaxSize(max_size=60, interpolation=cv2.INTER_CUBIC),
                A.CenterCrop(height=64, width=64, pad_if_needed=True, border_mode=cv2.BORDER_CONSTANT, fill=114),
                A.ToFloat(max_value=255),
            ]
        ),
        "exact-resize": A.Compose(
            [
                A.Resize(height=56, width=72),
                A.PadIfNeeded(min_height=64, min_width=80, position="top_left", border_mode=cv2.BORDER_REFLECT_101),
                A.Normalize(max_pixel_value=255.0),
            ]
        ),
    }


def raw_photos(tmp: Path) -> list[Path]:
    out = []
    for i, (name, rows, cols) in enumerate(PHOTOS):
        path = tmp / f"photo{i}.png"
        Image.fromarray(np.ascontiguousarray(pixels(photo(name))[rows, cols])).save(path)
        out.append(path)
    return out


def albumentations_tensor(pipeline: Any, path: Path) -> np.ndarray:
    """The application's tensor: Albumentations on the RGB array, then ToTensorV2's CHW and a batch of one."""
    image = np.asarray(Image.open(path).convert("RGB"))
    out = np.asarray(pipeline(image=image)["image"], np.float32)
    return out.transpose(2, 0, 1)[None]


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_albumentations_saved_pipeline_rebuilds_its_own_output(tmp_path: Path, name: str) -> None:
    pipeline = pipelines()[name]
    saved = tmp_path / "aug.json"
    A.save(pipeline, str(saved))
    assert json.loads(saved.read_text())["__version__"] == A.__version__
    raws = raw_photos(tmp_path)
    # A tolerance far below one grey level: the same OpenCV kernels, only float rounding may differ.
    prep = {"kind": "image", "tolerance": 1e-5, "import": {"format": "albumentations", "path": "aug.json"}}
    entry = {"name": "x", "dtype": "float32", "layout": "NCHW", "preprocessing": prep}
    cases = [
        {"name": f"c{i}", "inputs": {"x": albumentations_tensor(pipeline, p)}, "raw": {"x": p}}
        for i, p in enumerate(raws)
    ]
    ctx = bundle_maker(tmp_path)([entry], cases, files={"aug.json": saved.read_text()})
    assert [f.message for f in fidelity_stage(ctx)] == []


def test_the_2x_fields_a_center_crop_writes_are_read(tmp_path: Path) -> None:
    saved = tmp_path / "aug.json"
    A.save(A.Compose([A.CenterCrop(height=8, width=8)]), str(saved))
    fields = json.loads(saved.read_text())["transform"]["transforms"][0]
    assert fields["pad_position"] == "center" and fields["pad_if_needed"] is False  # what 2.x writes
    (crop,) = read_pipeline("albumentations", saved, "aug.json")[1:]
    assert crop.words() == "crop: {center: [8, 8]}"


@pytest.mark.parametrize(
    ("transform", "refusal"),
    [
        (A.LongestMaxSize(max_size=64, area_for_downscale="image"), 'area_for_downscale: "image"'),
        (A.LongestMaxSize(max_size_hw=(64, 48)), "max_size_hw: [64, 48]"),
        (A.Crop(x_max=40, y_max=40, pad_if_needed=True), "pad_if_needed: true"),
        (A.CenterCrop(height=8, width=8, pad_if_needed=True, pad_position="random"), "pad_position 'random'"),
        (A.PadIfNeeded(min_height=None, min_width=None, pad_height_divisor=32, pad_width_divisor=32), "divisor"),
    ],
)
def test_an_option_that_changes_the_image_is_refused_by_name(tmp_path: Path, transform: Any, refusal: str) -> None:
    saved = tmp_path / "aug.json"
    A.save(A.Compose([transform]), str(saved))
    with pytest.raises(CannotReproduce, match=re.escape(refusal)):
        read_pipeline("albumentations", saved, "aug.json")


def test_an_option_unknown_here_is_refused_by_name_not_guessed(tmp_path: Path) -> None:
    saved = tmp_path / "aug.json"
    A.save(A.Compose([A.Resize(height=8, width=8)]), str(saved))
    data = json.loads(saved.read_text())
    data["transform"]["transforms"][0]["keep_aspect"] = True  # as a newer release might add
    saved.write_text(json.dumps(data))
    with pytest.raises(CannotReproduce, match=re.escape("option(s) keep_aspect: true cannot be reproduced")):
        read_pipeline("albumentations", saved, "aug.json")


def test_a_refused_import_is_a_check_not_run_in_the_verdict_and_fails_strict(
    example: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """The shipped example with its image pipeline imported from an A.save file whose resize shrinks with
    INTER_AREA (area_for_downscale), which no step says: the fidelity check does not run, and says so."""
    A.save(
        A.Compose([A.SmallestMaxSize(max_size=36, area_for_downscale="image"), A.CenterCrop(32, 32), A.Normalize()]),
        str(example / "aug.json"),
    )
    data = yaml.safe_load((example / "bundle.yaml").read_text())
    data["inputs"][0]["preprocessing"] = {"kind": "image", "import": {"format": "albumentations", "path": "aug.json"}}
    (example / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert cli("lock", example)[0] == 0
    code, out, _ = cli("verify", example)
    verdict = next(line for line in out.splitlines() if "not run" in line)
    assert "1 check not run: fidelity of input 'pixel_values'" in verdict
    assert 'area_for_downscale: "image" cannot be reproduced' in out
    assert code == 0
    strict, _, _ = cli("verify", "--strict", example)
    assert strict != 0
