"""Albumentations (A.save) and OpenVINO Accuracy Checker pipeline files read into steps: the checker
rebuilds what the pipeline makes, and refuses by name what the steps cannot say.

The files are written as the tools write them (A.save's JSON and YAML, an Accuracy Checker config's
`preprocessing:` list); the reference tensors follow each tool's code with OpenCV and NumPy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import yaml
from PIL import Image
from prepkit import bundle_maker, photo, pixels

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.cli import main
from checker.preprocess.errors import CannotReproduce, PreprocessError
from checker.preprocess.image.importers import read_pipeline

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
COMPOSE = {
    "__version__": "1.4.24",
    "transform": {
        "__class_fullname__": "Compose",
        "p": 1.0,
        "transforms": [
            {"__class_fullname__": "LongestMaxSize", "p": 1, "max_size": 64, "interpolation": 1},
            {
                "__class_fullname__": "PadIfNeeded",
                "p": 1.0,
                "min_height": 64,
                "min_width": 64,
                "pad_height_divisor": None,
                "pad_width_divisor": None,
                "position": "center",
                "border_mode": 0,
                "value": 0,
                "mask_value": None,
            },
            {"__class_fullname__": "Normalize", "p": 1.0, "mean": MEAN, "std": STD, "max_pixel_value": 255.0},
            {"__class_fullname__": "ToTensorV2", "p": 1.0, "transpose_mask": False},
        ],
        "bbox_params": None,
        "keypoint_params": None,
        "additional_targets": {},
    },
}
OPENVINO = {
    "preprocessing": [
        {"type": "resize", "size": 40, "interpolation": "LINEAR"},
        {"type": "center_crop", "dst_width": 32, "dst_height": 32},
        {"type": "bgr_to_rgb"},
        {"type": "normalization", "mean": "(123.675, 116.28, 103.53)", "std": "58.395, 57.12, 57.375"},
    ]
}


def raw_image(tmp: Path) -> Path:
    path = tmp / "raw.png"
    Image.fromarray(pixels(photo("chelsea.png"))[40:160, 60:330]).save(path)  # 120 x 270
    return path


def albumentations_tensor(path: Path) -> np.ndarray:
    """LongestMaxSize (round(side * scale)), PadIfNeeded (centred, the odd row after), Normalize, ToTensorV2."""
    img = np.asarray(Image.open(path).convert("RGB"))
    h, w = img.shape[:2]
    scale = 64 / max(h, w)
    img = cv2.resize(img, (round(w * scale), round(h * scale)), interpolation=cv2.INTER_LINEAR)
    h, w = img.shape[:2]
    top, left = int((64 - h) / 2.0), int((64 - w) / 2.0)
    img = cv2.copyMakeBorder(img, top, 64 - h - top, left, 64 - w - left, cv2.BORDER_CONSTANT, value=0)
    x = (img.astype(np.float32) - np.array(MEAN, np.float32) * 255) / (np.array(STD, np.float32) * 255)
    return x.transpose(2, 0, 1)[None]


def openvino_tensor(path: Path) -> np.ndarray:
    img = cv2.imread(str(path))
    img = cv2.resize(img, (40, 40), interpolation=cv2.INTER_LINEAR)
    img = img[4:36, 4:36]
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    x = (img.astype(np.float32) - (123.675, 116.28, 103.53)) / (58.395, 57.12, 57.375)
    return x.transpose(2, 0, 1)[None].astype(np.float32)


@pytest.mark.parametrize(
    ("fmt", "content", "suffix", "oracle"),
    [
        ("albumentations", json.dumps(COMPOSE), "json", albumentations_tensor),
        ("albumentations", yaml.safe_dump(COMPOSE), "yaml", albumentations_tensor),
        ("openvino", yaml.safe_dump(OPENVINO), "yml", openvino_tensor),
    ],
)
def test_an_imported_pipeline_is_rebuilt(tmp_path: Path, fmt: str, content: str, suffix: str, oracle: Any) -> None:
    raw = raw_image(tmp_path)
    prep = {"kind": "image", "import": {"format": fmt, "path": f"pipeline.{suffix}"}}
    entry = {"name": "x", "dtype": "float32", "layout": "NCHW", "preprocessing": prep}
    case = {"name": "c", "inputs": {"x": oracle(raw)}, "raw": {"x": raw}}
    ctx = bundle_maker(tmp_path)([entry], [case], files={f"pipeline.{suffix}": content})
    assert list(fidelity_stage(ctx)) == []


@pytest.mark.parametrize(
    ("fmt", "data", "refusal"),
    [
        ("albumentations", {"__class_fullname__": "HorizontalFlip", "p": 0.5}, "probability 0.5"),
        ("albumentations", {"__class_fullname__": "RandomBrightnessContrast", "p": 1}, "RandomBrightnessContrast"),
        ("albumentations", {"__class_fullname__": "PadIfNeeded", "min_height": 8, "pad_height_divisor": 32}, "divisor"),
        ("albumentations", {"__class_fullname__": "Normalize", "normalization": "image"}, "normalization 'image'"),
        ("openvino", {"type": "resize", "size": 8, "aspect_ratio_scale": "frcnn_keep_aspect_ratio"}, "frcnn"),
        ("openvino", {"type": "resize", "size": 8, "resize_realization": "tf"}, "resize_realization"),
        ("openvino", {"type": "normalization", "mean": "imagenet"}, "no named presets"),
        ("openvino", {"type": "flip", "mode": "horizontal"}, "flip"),
    ],
)
def test_what_cannot_be_said_is_refused_by_name(tmp_path: Path, fmt: str, data: dict[str, Any], refusal: str) -> None:
    if fmt == "albumentations":
        content: Any = {"transform": {"__class_fullname__": "Compose", "transforms": [data]}}
    else:
        content = {"preprocessing": [data]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content))
    with pytest.raises(CannotReproduce, match=refusal):
        read_pipeline(fmt, path, "p.json")


def test_a_refused_import_is_not_rebuilt_and_says_why(tmp_path: Path) -> None:
    raw = raw_image(tmp_path)
    content = {"transform": {"__class_fullname__": "Compose", "transforms": [{"__class_fullname__": "Blur"}]}}
    prep = {"kind": "image", "import": {"format": "albumentations", "path": "aug.json"}}
    entry = {"name": "x", "dtype": "float32", "layout": "NCHW", "preprocessing": prep}
    case = {"name": "c", "inputs": {"x": np.zeros((1, 3, 4, 4), np.float32)}, "raw": {"x": raw}}
    ctx = bundle_maker(tmp_path)([entry], [case], files={"aug.json": json.dumps(content)})
    (finding,) = fidelity_stage(ctx)
    assert finding.id == F.INPUTS_NOT_REBUILT
    assert "Albumentations' Blur has no step that reproduces it" in finding.message


def test_the_import_command_prints_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ac.yml"
    path.write_text(yaml.safe_dump(OPENVINO))
    assert main(["preprocess", "--import", "openvino", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        "steps:",
        "  - decode: {mode: BGR, library: opencv}",
        "  - resize: {size: [40, 40], filter: linear, library: opencv}",
        "  - crop: {center: [32, 32]}",
        "  - convert: {to: RGB}",
        "  - normalize: {mean: [123.675, 116.28, 103.53], std: [58.395, 57.12, 57.375]}",
    ]


def test_a_hugging_face_config_imports_as_its_fixed_order(capsys: pytest.CaptureFixture[str]) -> None:
    config = Path(__file__).parent.parent / "fixtures" / "preprocess" / "hf" / "image-processor-current.json"
    assert main(["preprocess", "--import", "huggingface", str(config)]) == 0
    out = capsys.readouterr().out
    assert "  - resize: {shorter_side: 224, rounding: floor, filter: bicubic}\n" in out
    assert "  - crop: {center: [224, 224], pad_if_smaller: [0]}\n" in out


def test_an_imported_pipeline_is_bounded_like_a_declared_one(tmp_path: Path) -> None:
    path = tmp_path / "ac.json"
    path.write_text(json.dumps({"preprocessing": [{"type": "bgr_to_rgb"}] * 100}))
    with pytest.raises(PreprocessError, match="at most 64"):
        read_pipeline("openvino", path, "ac.json")
