"""A bundle around a real text detector (PP-OCRv4 mobile, from the rapidocr-onnxruntime wheel) and its 8-bit
static quantization, calibrated on lines of rendered text: the probability map that int8 activations cannot hold."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fetch_models import cached
from modelkit import run

PACKAGE = "rapidocr_onnxruntime-1.4.4"
DETECTOR = "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"
INPUT, OUTPUT = "x", "sigmoid_0.tmp_0"
SIZE = (64, 96)  # height, width: multiples of 32, as the detector's resize makes them
CALIBRATION = 4
GLYPHS = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


def detector_path() -> Path | None:
    folder = cached(PACKAGE)
    path = folder / DETECTOR if folder else None
    return path if path is not None and path.is_file() else None


def text_line(seed: int) -> np.ndarray:
    """A light page with two lines of dark glyphs, normalised as the detector's NormalizeImage does
    (mean 0.5, std 0.5 on [0, 1]), NCHW."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    height, width = SIZE
    page = Image.new("RGB", (width, height), tuple(int(v) for v in rng.integers(170, 250, 3)))
    draw = ImageDraw.Draw(page)
    for row in range(2):
        text = "".join(rng.choice(list(GLYPHS), 6))
        ink = tuple(int(v) for v in rng.integers(0, 80, 3))
        draw.text((int(rng.integers(2, 30)), 8 + 28 * row), text, fill=ink, font_size=18)
    pixels = (np.asarray(page, np.float32) / 255.0 - 0.5) / 0.5
    return np.ascontiguousarray(pixels.transpose(2, 0, 1)[None])


def write_detector_bundle(root: Path, cases: int = 8, limit: float = 0.005) -> Path:
    """The float detector as the baseline and its QUInt8/QInt8 QDQ quantization (calibrated on the first
    CALIBRATION cases, recorded so the transform can be re-run) judged by the mean error of the map."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    source = detector_path()
    assert source is not None, "run tests/fetch_models.py"
    root.mkdir(parents=True)
    shutil.copyfile(source, root / "det.onnx")
    entries: list[dict[str, Any]] = []
    inputs = [text_line(i) for i in range(cases)]
    for i, x in enumerate(inputs):
        name = f"line-{i}"
        (root / "cases").mkdir(exist_ok=True)
        np.save(root / "cases" / f"{name}.npy", x)
        np.save(root / "cases" / f"{name}.map.npy", run(root / "det.onnx", {INPUT: x})[OUTPUT])
        entry = {"name": name, "inputs": {INPUT: f"cases/{name}.npy"}, "expected": {OUTPUT: f"cases/{name}.map.npy"}}
        entries.append({**entry, "tags": ["edge"]} if i == cases - 1 else entry)

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items = iter(inputs[:CALIBRATION])

        def get_next(self) -> dict[str, np.ndarray] | None:
            item = next(self._items, None)
            return None if item is None else {INPUT: item}

    settings = {
        "quant_format": "QDQ",
        "activation_type": "QUInt8",
        "weight_type": "QInt8",
        "per_channel": False,
        "calibrate_method": "MinMax",
    }
    quantize_static(
        str(root / "det.onnx"),
        str(root / "det.int8.onnx"),
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=False,
    )
    mean_error = [{"output": OUTPUT, "check": "mean_abs", "max": limit}]
    manifest = {
        "manifest_version": 1,
        "release": {"name": "ppocr-v4-mobile-det", "version": "1.4.4"},
        "graph": {"path": "det.onnx", "producer": {"tool": "rapidocr-onnxruntime wheel", "version": "1.4.4"}},
        "inputs": [
            {
                "name": INPUT,
                "dtype": "float32",
                "shape": [1, 3, "height", "width"],
                "layout": "NCHW",
                "meaning": "image",
                "preprocessing": {"kind": "custom", "description": "rendered text lines, normalised to [-1, 1]"},
            }
        ],
        "outputs": [{"name": OUTPUT, "dtype": "float32", "shape": [1, 1, "height", "width"], "meaning": "mask"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "the float detector's own map"},
            "cases": entries,
            "rules": [{"output": OUTPUT, "check": "max_abs", "max": 1e-4}],
        },
        "variants": [
            {
                "name": "int8",
                "graph": {"path": "det.int8.onnx"},
                "derived_from": "baseline",
                "transform": {
                    "tool": "onnxruntime.quantization.quantize_static",
                    "version": "1.32.0",
                    "settings": {**settings, "calibration_cases": CALIBRATION},
                },
                "rules": mean_error,
            }
        ],
    }
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root
