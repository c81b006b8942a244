"""An imported pipeline that does not reproduce a stored tensor is explained in its own file's words: the
Albumentations transform and option, the Accuracy Checker entry, the preprocessor_config.json key, not the
steps the file was read into (which the file does not contain).

The stored tensors are each tool's own output where it is installed (Albumentations 2.x), else the tool's
documented arithmetic with OpenCV, Pillow and NumPy, made with the one mistake the explanation must name.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import yaml
from PIL import Image
from prepkit import bundle_maker, photo, pixels
from test_importers import OPENVINO

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.preprocess.image.importers import read_traced
from checker.preprocess.image.neighbours import Edit
from checker.preprocess.image.origins import in_source_words
from checker.preprocess.image.steps import Normalize

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # its import would otherwise ask PyPI for a newer version
import albumentations as A

HF_CONFIG = Path(__file__).parent.parent / "fixtures" / "preprocess" / "hf" / "image-processor-current.json"


def raw_image(tmp: Path) -> Path:
    path = tmp / "raw.png"
    Image.fromarray(np.ascontiguousarray(pixels(photo("chelsea.png"))[:, 20:420])).save(path)  # 300 x 400
    return path


def explanation(tmp: Path, fmt: str, file: str, content: str, stored: np.ndarray, raw: Path) -> str | None:
    """The explanation of the one fidelity finding; `fmt` "config" names the file as `config:` does."""
    prep: dict[str, Any] = {"kind": "image", "import": {"format": fmt, "path": file}}
    if fmt == "config":
        prep = {"kind": "image", "config": file}
    entry = {"name": "x", "dtype": "float32", "layout": "NCHW", "preprocessing": prep}
    case = {"name": "c", "inputs": {"x": stored}, "raw": {"x": raw}}
    tmp.mkdir(exist_ok=True)
    (finding,) = fidelity_stage(bundle_maker(tmp)([entry], [case], files={file: content}))
    assert finding.id == F.INPUTS_FIDELITY
    found = finding.details["explanation"]
    assert found is None or found in finding.message
    return found


def saved(pipeline: Any, tmp: Path) -> str:
    A.save(pipeline, str(tmp / "aug.json"))
    return (tmp / "aug.json").read_text()


def albumentations_output(pipeline: Any, image: np.ndarray) -> np.ndarray:
    return np.asarray(pipeline(image=image)["image"], np.float32).transpose(2, 0, 1)[None]


def declared(interpolation: int = cv2.INTER_LINEAR, top: float = 255.0) -> Any:
    return A.Compose(
        [
            A.LongestMaxSize(max_size=64, interpolation=interpolation),
            A.PadIfNeeded(min_height=64, min_width=64, border_mode=cv2.BORDER_CONSTANT, fill=0),
            A.Normalize(max_pixel_value=top),
        ]
    )


def test_albumentations_another_interpolation_is_named_as_its_option(tmp_path: Path) -> None:
    raw = raw_image(tmp_path)
    stored = albumentations_output(declared(cv2.INTER_AREA), np.asarray(Image.open(raw).convert("RGB")))
    found = explanation(tmp_path, "albumentations", "aug.json", saved(declared(), tmp_path), stored, raw)
    assert found == "when `LongestMaxSize` (transform 0) in aug.json has `interpolation: 3` (it has 1)"


def test_albumentations_given_a_bgr_image_is_named_as_the_composes_input(tmp_path: Path) -> None:
    raw = raw_image(tmp_path)
    stored = albumentations_output(declared(), cv2.imread(str(raw)))  # cv2.imread without cvtColor: BGR
    found = explanation(tmp_path, "albumentations", "aug.json", saved(declared(), tmp_path), stored, raw)
    assert str(found).startswith(
        "when the image given to the Compose in aug.json is BGR (as cv2.imread reads it), not RGB"
    )


def test_albumentations_normalize_without_its_division_names_max_pixel_value(tmp_path: Path) -> None:
    raw = raw_image(tmp_path)
    stored = albumentations_output(declared(top=1.0), np.asarray(Image.open(raw).convert("RGB")))
    found = explanation(tmp_path, "albumentations", "aug.json", saved(declared(), tmp_path), stored, raw)
    assert found == "when `Normalize` (transform 2) in aug.json has `max_pixel_value: 1` (it has 255)"


def test_openvino_a_missing_channel_swap_is_named_as_its_entry(tmp_path: Path) -> None:
    raw = raw_image(tmp_path)
    img = cv2.resize(cv2.imread(str(raw)), (40, 40), interpolation=cv2.INTER_LINEAR)[4:36, 4:36]  # still BGR
    stored = ((img.astype(np.float32) - (123.675, 116.28, 103.53)) / (58.395, 57.12, 57.375)).astype(np.float32)
    stored = stored.transpose(2, 0, 1)[None]
    found = explanation(tmp_path, "openvino", "ac.yml", yaml.safe_dump(OPENVINO), stored, raw)
    assert found == "without `bgr_to_rgb` (preprocessing 2) in ac.yml"


def hf_tensor(raw: Path, resize: bool, resample: Image.Resampling = Image.Resampling.BICUBIC) -> np.ndarray:
    """CLIPImageProcessor's order with Pillow and NumPy: shortest edge to 224 (bicubic), centre crop 224."""
    config = json.loads(HF_CONFIG.read_text())
    img = Image.open(raw).convert("RGB")
    if resize:
        w, h = img.size
        short = min(w, h)
        img = img.resize((int(224 * w / short), int(224 * h / short)), resample)
    w, h = img.size
    top, left = (h - 224) // 2, (w - 224) // 2
    x = np.asarray(img.crop((left, top, left + 224, top + 224)), np.float32) * np.float32(config["rescale_factor"])
    x = (x - np.array(config["image_mean"], np.float32)) / np.array(config["image_std"], np.float32)
    return x.transpose(2, 0, 1)[None].astype(np.float32)


@pytest.mark.parametrize("fmt", ["huggingface", "config"])
def test_hugging_face_a_skipped_resize_is_named_as_do_resize(tmp_path: Path, fmt: str) -> None:
    """Imported (`import: {format: huggingface}`) or named as the fields' `config:`, the same words."""
    raw = raw_image(tmp_path)
    config = HF_CONFIG.read_text()
    name = "preprocessor_config.json"
    said = explanation(tmp_path / "a", fmt, name, config, hf_tensor(raw, False), raw)
    assert str(said).startswith("when `do_resize` is false")
    stored = hf_tensor(raw, True, Image.Resampling.BILINEAR)
    found = explanation(tmp_path / "b", fmt, name, config, stored, raw)
    assert found == "when preprocessor_config.json has `resample: 2` (it has 3)"


def test_the_hugging_face_oracle_passes_as_imported(tmp_path: Path) -> None:
    raw = raw_image(tmp_path)
    prep = {"kind": "image", "import": {"format": "huggingface", "path": "preprocessor_config.json"}}
    entry = {"name": "x", "dtype": "float32", "layout": "NCHW", "preprocessing": prep}
    good = {"name": "c", "inputs": {"x": hf_tensor(raw, resize=True)}, "raw": {"x": raw}}
    files = {"preprocessor_config.json": HF_CONFIG.read_text()}
    assert list(fidelity_stage(bundle_maker(tmp_path)([entry], [good], files=files))) == []


def test_an_edit_the_file_cannot_say_keeps_the_step_words_and_says_so(tmp_path: Path) -> None:
    """A resize made with Pillow (antialiased) has no Albumentations option: the step words, with the file
    they were read from."""
    raw = raw_image(tmp_path)
    small = np.asarray(Image.open(raw).convert("RGB").resize((64, 48), Image.Resampling.BILINEAR))
    stored = albumentations_output(A.Compose([A.PadIfNeeded(64, 64, border_mode=0), A.Normalize()]), small)
    found = explanation(tmp_path, "albumentations", "aug.json", saved(declared(), tmp_path), stored, raw)
    # The edit's words end with the file they were read from; a residual the edit leaves (with the [torch] extra
    # installed, Albumentations' Normalize rounds otherwise) may follow as its own figure.
    assert found is not None and re.search(
        r"\(in the steps aug\.json is read into\)( \(mean difference [^()]+\))?$", found
    )
    assert "`resize` has `library: pillow, filter: bilinear`" in found


def test_mean_and_std_in_the_other_channel_order_are_said_as_the_transforms_options(tmp_path: Path) -> None:
    """The words an edit that reverses Normalize's constants gets, from the origins A.save's file gives."""
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    A.save(A.Compose([A.Normalize(mean=mean, std=std)]), str(tmp_path / "transforms.json"))
    imported = read_traced("albumentations", tmp_path / "transforms.json", "transforms.json")
    at = next(i for i, s in enumerate(imported.steps) if isinstance(s, Normalize))
    edited = list(imported.steps)
    edited[at] = Normalize(mean[::-1], std[::-1])
    words = in_source_words(Edit("change", at), imported.steps, tuple(edited), imported.origins)
    assert words == (
        "when `Normalize` (transform 0) in transforms.json has `mean`, `std` in the other channel order "
        "(`mean: [0.406, 0.456, 0.485]`, `std: [0.225, 0.224, 0.229]`)"
    )
