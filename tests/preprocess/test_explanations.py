"""Every single edit that explains a stored tensor, the most exact first: on ddddocr's own image functions run
grey-first (the grey captcha pipeline) and with its scale left out, and on PP-OCR's OpenCV idiom of
RGB-ordered ImageNet constants on BGR arrays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from oracles import ddddocr, ddddocr_classification
from prepkit import bundle_maker
from test_real_pipelines import CAPTCHA, SCALE, raw_image

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.findings import Finding
from checker.preprocess.search import Alternative, explain

SWAP = "when `convert: {to: L}` runs before `resize` (the manifest has it after)"
IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def grey_first(path: Path) -> np.ndarray:
    """ddddocr's own load, grey conversion and resize (to height 64, width `int(w * (64 / h))`), in the order
    of a captcha pipeline that converts to grey first; then / 255 as ddddocr does."""
    processor = ddddocr("preprocessing.image_processor").ImageProcessor
    image = processor.convert_to_grayscale(ddddocr("utils.image_io").load_image_from_input(path))
    height = 64
    image = processor.resize_image(image, (int(image.size[0] * (height / image.size[1])), height))
    return (np.asarray(image).astype(np.float32) / 255.0)[None, None]


def findings(tmp_path: Path, steps: list[dict[str, Any]], stored: list[np.ndarray], raws: list[Path]) -> list[Finding]:
    shape = [1, int(stored[0].shape[1]), int(stored[0].shape[2]), "width"]
    entry = {"name": "x", "dtype": "float32", "shape": shape, "preprocessing": {"kind": "image", "steps": steps}}
    cases = [{"name": f"c{i}", "inputs": {"x": s}, "raw": {"x": r}} for i, (s, r) in enumerate(zip(stored, raws))]
    found = list(fidelity_stage(bundle_maker(tmp_path)([entry], cases)))
    assert {f.id for f in found} == {F.INPUTS_FIDELITY}, [f.message for f in found]
    return found


def captcha_raws(tmp_path: Path) -> list[Path]:
    # the two captcha sizes, and two more
    sizes = [(49, 98), (30, 110), (40, 130), (57, 150)]
    return [raw_image(tmp_path, f"raw{i}", h, w, 30 * (i % 2)) for i, (h, w) in enumerate(sizes)]


def test_grey_before_resize_is_explained_the_same_right_way_in_every_case(tmp_path: Path) -> None:
    raws = captcha_raws(tmp_path)
    found = findings(tmp_path, CAPTCHA, [grey_first(r) for r in raws], raws)
    assert len(found) == len(raws)
    several = 0
    for finding in found:
        explanation = finding.details["explanation"]
        assert explanation.startswith(f"{SWAP} (exactly)") or explanation == SWAP, finding.message
        if explanation != SWAP:  # another edit fits within the tolerance too: listed after, with its measure
            several += 1
            assert "single edits reproduce it within the tolerance, ranked by how exactly" in explanation
            others = explanation.split("the others: ", 1)[1]
            assert "mean difference" in others and SWAP not in others
            fits = finding.details["fits"]
            assert fits[0]["edit"] == SWAP and fits[0]["exact"] and not fits[1]["exact"]
            assert fits[1]["mean_difference"] > fits[0]["mean_difference"]
    assert several >= 1  # in the first case the scale moved before the grey conversion fits too, less exactly


def test_the_more_exact_fit_wins_over_the_likelier_one() -> None:
    stored = np.linspace(0, 1, 50, dtype=np.float32)
    near = stored + np.float32(0.003)
    alternatives = [
        Alternative("likelier but off by 0.003", lambda: near, 0.004),
        Alternative("off by nothing", lambda: stored.copy(), 0.004),
        Alternative("outside the tolerance", lambda: stored + 0.01, 0.004),
        Alternative("off by nothing, the same tensor", lambda: stored.copy(), 0.004),
    ]
    search = explain(alternatives, stored)
    assert [f.description for f in search.fits] == ["off by nothing", "likelier but off by 0.003"]
    assert search.fits[0].exact and search.fits[0].same == ("off by nothing, the same tensor",)
    assert search.fits[1].largest == pytest.approx(0.003, abs=1e-6)
    assert search.found is not None and search.found.startswith("off by nothing (exactly; the very same tensor")
    assert "the others: likelier but off by 0.003 (mean difference 0.003, largest 0.003)" in search.found


def test_a_missing_scale_is_found_without_a_normalize_after_it(tmp_path: Path) -> None:
    raws = captcha_raws(tmp_path)[:2]
    steps = [s for s in CAPTCHA if "scale" not in s]  # decode, resize, convert, layout: no value step at all
    for finding in findings(tmp_path, steps, [ddddocr_classification(r) for r in raws], raws):
        explanation = finding.details["explanation"]
        assert explanation.startswith("with `scale: 0.003921568627` added before `layout` (exactly)"), explanation


def bgr_with_rgb_constants(path: Path) -> np.ndarray:
    """The OpenCV idiom of PP-OCR's detector (its NormalizeImage): `cv2.imread`'s BGR array, / 255, then
    ImageNet's RGB-ordered mean and std, channel by channel as they come."""
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    tensor = (image.astype(np.float32) / 255.0 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD)
    return tensor.transpose(2, 0, 1)[None].astype(np.float32)


def test_normalize_constants_in_the_other_channel_order_are_named(tmp_path: Path) -> None:
    raws = [raw_image(tmp_path, "det", 64, 96)]
    # The manifest follows the docs' "in the order of colour": the BGR array's constants, BGR-ordered.
    steps = [
        {"decode": {"mode": "BGR"}},
        {"scale": SCALE},
        {"normalize": {"mean": IMAGENET_MEAN[::-1], "std": IMAGENET_STD[::-1]}},
        {"layout": "NCHW"},
    ]
    (finding,) = findings(tmp_path, steps, [bgr_with_rgb_constants(r) for r in raws], raws)
    explanation = finding.details["explanation"]
    assert explanation.startswith("when `normalize` has its mean and std in the other channel order"), explanation
    assert "mean: [0.485, 0.456, 0.406]" in explanation
