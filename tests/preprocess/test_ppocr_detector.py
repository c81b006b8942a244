"""A real text detector whose geometry depends on the image: PP-OCRv4's DB detector, the ONNX graph the
rapidocr-onnxruntime 1.4.4 wheel ships, fed as PaddleOCR 2.8.1's own operators feed it (oracles.py:
DetResizeForTest with limit_side_len 960 and limit_type max, then NormalizeImage and ToCHWImage).

DetResizeForTest pads with zeros (content top left) to at least 32 x 32 only when h + w < 64, shrinks only an
image whose longer side exceeds 960 (the other side truncated), and rounds each side to a multiple of 32 with
Python's `round`. Declared with conditional steps, the bundle passes on a large, a tiny, a thin and an ordinary
image; each planted mistake (the resize always run, no rounding to 32, the pad always run or never) is named by
the one edit that undoes it. Both files come from PyPI through tests/fetch_models.py; without them these tests
skip.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fetch_models import cached
from modelkit import run
from oracles import paddleocr_detector
from PIL import Image
from prepkit import bundle_maker, changed, photo, pixels, without

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.context import Options
from checker.verify import verify_paths

MODEL = "ch_PP-OCRv4_det_infer.onnx"
LIMIT = {"longer_side": {"gt": 960}}
ROUND_32 = {"multiple_of": 32, "multiple_of_rounding": "half_even", "library": "opencv", "filter": "linear"}
PAD = {"when": {"sum_of_sides": {"lt": 64}}, "at_least": [32, 32], "position": "top_left", "value": 0}
SHRINK = {"when": LIMIT, "longer_side": 960, "rounding": "floor", "arithmetic": "float_scale_first", **ROUND_32}
KEEP = {"when": {"longer_side": {"le": 960}}, "scale": 1.0, **ROUND_32}
STEPS: list[dict[str, Any]] = [
    {"decode": {"mode": "BGR", "library": "opencv"}},
    {"pad": PAD},
    {"resize": SHRINK},
    {"resize": KEEP},
    {"scale": 1 / 255},
    {"normalize": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}},
    {"layout": "NCHW"},
]
# large: shrunk to 192 x 960; tiny: padded to 32 x 32, then kept; ordinary: 160 x 256; thin: not padded (the
# sides sum to 320), stretched to 32 x 288
SIZES = {"large": (200, 1000), "tiny": (20, 30), "ordinary": (150, 250), "thin": (20, 300)}
SHAPE = [1, 3, "height", "width"]


@pytest.fixture(scope="module")
def detector() -> Path:
    path = cached(MODEL)
    if path is None:
        pytest.skip(f"{MODEL} is not in the model cache; fetch it with: python tests/fetch_models.py")
    return path


def raw_image(folder: Path, name: str, h: int, w: int) -> Path:
    """An h x w picture cut from a real photograph."""
    arr = pixels(photo("chelsea.png"))[40:240, 20:440]
    path = folder / f"{name}.png"
    Image.fromarray(arr).resize((w, h), Image.Resampling.BOX).save(path)
    return path


def second_resize(steps: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    """`steps` with `keys` left out of the second resize (the one for images that are not shrunk)."""
    out = list(steps)
    out[3] = {"resize": {k: v for k, v in KEEP.items() if k not in keys}}
    return out


def write_bundle(root: Path, model: Path, steps: list[dict[str, Any]]) -> Path:
    (root / "cases").mkdir(parents=True)
    (root / "model.onnx").write_bytes(model.read_bytes())
    cases = []
    for name, (h, w) in SIZES.items():
        raw = raw_image(root / "cases", name, h, w)
        x = paddleocr_detector(raw)
        np.save(root / "cases" / f"{name}.npy", x)
        np.save(root / "cases" / f"{name}_maps.npy", run(root / "model.onnx", {"x": x})["sigmoid_0.tmp_0"])
        cases.append(
            {
                "name": name,
                "inputs": {"x": f"cases/{name}.npy"},
                "expected": {"sigmoid_0.tmp_0": f"cases/{name}_maps.npy"},
                "raw": {"x": f"cases/{name}.png"},
            }
        )
    manifest = {
        "manifest_version": 1,
        "release": {"name": "ppocr-v4-det", "version": "1.4.4"},
        "graph": {"path": "model.onnx", "producer": {"tool": "rapidocr-onnxruntime wheel", "version": "1.4.4"}},
        "inputs": [{"name": "x", "dtype": "float32", "shape": SHAPE, "layout": "NCHW", "meaning": "image"}],
        "outputs": [
            {"name": "sigmoid_0.tmp_0", "dtype": "float32", "shape": [1, 1, "height", "width"], "meaning": "mask"}
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "onnxruntime on PaddleOCR's own DetResizeForTest input"},
            "cases": cases,
            "rules": [{"output": "sigmoid_0.tmp_0", "check": "max_abs", "max": 1e-4}],
        },
    }
    manifest["inputs"][0]["preprocessing"] = {"kind": "image", "steps": steps}
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root


def test_the_detector_declared_with_conditional_steps_passes(detector: Path, tmp_path: Path) -> None:
    bundle = verify_paths([str(write_bundle(tmp_path / "b", detector, STEPS))], Options()).to_dict()["bundles"][0]
    assert [f["message"] for f in bundle["findings"] if f["severity"] == "error"] == []
    assert [f["id"] for f in bundle["findings"] if f["id"].startswith("inputs.")] == []
    assert bundle["comparisons"][0]["status"] == "pass"


def test_the_oracle_makes_each_geometry(tmp_path: Path) -> None:
    """The cases exercise each branch of DetResizeForTest: shrink, pad, round up, stretch a thin side."""
    shapes = {n: paddleocr_detector(raw_image(tmp_path, n, h, w)).shape[2:] for n, (h, w) in SIZES.items()}
    assert shapes == {"large": (192, 960), "tiny": (32, 32), "ordinary": (160, 256), "thin": (32, 288)}


def fidelity(tmp_path: Path, steps: list[dict[str, Any]]) -> dict[str, str]:
    """The fidelity findings by case, the stored tensors made by PaddleOCR's own operators."""
    raws = {name: raw_image(tmp_path, name, h, w) for name, (h, w) in SIZES.items()}
    entry = {"name": "x", "dtype": "float32", "shape": SHAPE, "layout": "NCHW"}
    entry["preprocessing"] = {"kind": "image", "steps": steps}
    cases = [{"name": n, "inputs": {"x": paddleocr_detector(raw)}, "raw": {"x": raw}} for n, raw in raws.items()]
    found = list(fidelity_stage(bundle_maker(tmp_path)([entry], cases)))
    assert {f.id for f in found} <= {F.INPUTS_FIDELITY}, [f.message for f in found]
    return {next(n for n in SIZES if f"case '{n}'" in f.message): f.message for f in found}


def test_the_declaration_is_faithful_without_the_model(tmp_path: Path) -> None:
    assert fidelity(tmp_path, STEPS) == {}


MISTAKES = [
    # the shrinking resize run on every image: the ordinary, tiny and thin ones are enlarged to 960
    (
        "resize-always",
        without(STEPS, "resize", "when")[:3] + STEPS[3:],
        {"ordinary", "tiny", "thin"},
        "when `resize` has `when: {longer_side: {gt: 960}}` (the manifest has none: it always runs)",
    ),
    # the sides of an image that is not shrunk left as they are, not rounded to multiples of 32
    (
        "no-rounding",
        second_resize(STEPS, "multiple_of", "multiple_of_rounding"),
        {"ordinary", "thin", "tiny"} - {"tiny"},  # 32 x 32 after the pad is a multiple already
        "when `resize` has `multiple_of: 32` (the manifest has no multiple_of)",
    ),
    # the pad run on every image: the thin one is padded to 32 rows where PaddleOCR stretches it
    ("pad-always", without(STEPS, "pad", "when"), {"thin"}, "without `pad: {at_least: [32, 32], position: top_left"),
    # no pad: the tiny image is stretched to 32 x 32 where PaddleOCR pads it
    (
        "pad-never",
        [s for s in STEPS if "pad" not in s],
        {"tiny"},
        "with `pad: {at_least: [32, 32], position: top_left, value: 0}` added after decode",
    ),
    # the limit off by one and the strictness switched: wrong only for an image exactly at the limit, which
    # these are not, so the pad's limit is moved to where the thin image falls in it
    (
        "pad-limit",
        changed(STEPS, "pad", when={"sum_of_sides": {"lt": 321}}),
        {"thin"},
        "when `pad` has `when: {sum_of_sides: {lt: 320}}` (the manifest has {sum_of_sides: {lt: 321}})",
    ),
]


@pytest.mark.parametrize(("steps", "cases", "named"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES])
def test_each_planted_mistake_is_named_by_its_one_edit(
    tmp_path: Path, steps: list[dict[str, Any]], cases: set[str], named: str
) -> None:
    found = fidelity(tmp_path, steps)
    assert set(found) == cases, found
    for message in found.values():
        assert "the stored tensor matches the declared preprocessing" in message, message
        assert named in message, message
