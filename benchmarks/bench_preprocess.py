"""Rebuilding raw images with declared steps (checker.preprocess) against the same pipeline written directly.

    python benchmarks/bench_preprocess.py [--images 200] [--repeat 5]

Target: the checker rebuilds N raw images in <= 1.2x the time of the same pipeline written directly in
Pillow or OpenCV and NumPy. Two pipelines: a classifier's (Pillow: shorter side 256, centre crop 224, /255,
ImageNet mean and std) and an OCR line recogniser's (OpenCV linear resize to height 48 with PaddleOCR's
width rule, /255, -0.5, /0.5, zeros padded to at least 320 after normalising). Both sides decode every file
with Pillow; each side runs `--repeat` times, interleaved, and the medians are compared.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import skimage.data
from material import median
from PIL import Image

from checker.preprocess.decode import decode
from checker.preprocess.pipeline import run
from checker.preprocess.steps import parse_steps

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
CLASSIFIER = parse_steps(
    [
        {"decode": {"mode": "RGB"}},
        {"resize": {"shorter_side": 256, "rounding": "floor"}},
        {"crop": {"center": [224, 224]}},
        {"scale": 1 / 255},
        {"normalize": {"mean": list(MEAN), "std": list(STD)}},
    ]
)
OCR_LINE = parse_steps(
    [
        {"decode": {"mode": "BGR"}},
        {"resize": {"ppocr_line": {"height": 48, "min_width": 320}, "library": "opencv", "filter": "linear"}},
        {"scale": 1 / 255},
        {"normalize": {"mean": [0.5], "std": [0.5]}},
        {"pad": {"at_least": [None, 320], "position": "top_left", "value": 0}},
    ]
)


def write_images(folder: Path, count: int, line: bool) -> list[Path]:
    photo = np.asarray(Image.open(Path(skimage.data.__file__).parent / "chelsea.png").convert("RGB"))
    paths = []
    for i in range(count):
        h, w = (32 + i % 17, 200 + 7 * (i % 23)) if line else (300 - i % 40, 451 - i % 60)
        crop = photo[i % 20 : i % 20 + h, i % 30 : i % 30 + w] if not line else photo[60 : 60 + h, 40 : 40 + w]
        path = folder / f"{'line' if line else 'photo'}-{i}.png"
        Image.fromarray(np.ascontiguousarray(crop)).save(path, compress_level=1)
        paths.append(path)
    return paths


def direct_classifier(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        img = im.convert("RGB")
    w, h = img.size
    s = 256 / min(w, h)
    img = img.resize((256, int(h * s)) if w <= h else (int(w * s), 256), Image.Resampling.BILINEAR)
    arr = np.asarray(img)
    top, left = (arr.shape[0] - 224) // 2, (arr.shape[1] - 224) // 2
    x = arr[top : top + 224, left : left + 224].astype(np.float32) / 255
    return ((x - np.array(MEAN, np.float32)) / np.array(STD, np.float32)).transpose(2, 0, 1)[None]


def direct_ocr_line(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        img = cv2.cvtColor(np.asarray(im.convert("RGB")), cv2.COLOR_RGB2BGR)
    h, w = img.shape[:2]
    width = max(320, int(48 * w / h))
    resized_w = min(width, math.ceil(48 * w / h))
    x = cv2.resize(img, (resized_w, 48)).astype(np.float32).transpose(2, 0, 1) / 255
    x = (x - 0.5) / 0.5
    out = np.zeros((3, 48, width), np.float32)
    out[:, :, :resized_w] = x
    return out[None]


def checker_side(steps: tuple) -> Callable[[Path], np.ndarray]:  # type: ignore[type-arg]
    return lambda path: run(steps, decode(path, path.name), "NCHW", "float32")


def timed(fn: Callable[[Path], np.ndarray], paths: list[Path]) -> float:
    start = time.perf_counter()
    for path in paths:
        fn(path)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cv2.setNumThreads(1)  # both sides alike, and steadier on a shared machine
    with tempfile.TemporaryDirectory() as tmp:
        for name, line, steps, direct in (
            ("classifier (Pillow)", False, CLASSIFIER, direct_classifier),
            ("OCR line (OpenCV)", True, OCR_LINE, direct_ocr_line),
        ):
            paths = write_images(Path(tmp), args.images, line)
            ours = checker_side(steps)
            for path in paths[:5]:  # the same tensors, so the same work
                assert np.abs(ours(path) - direct(path)).max() < 2 / 255 / 0.224, name
            checker_times, direct_times = [], []
            for _ in range(args.repeat):
                checker_times.append(timed(ours, paths))
                direct_times.append(timed(direct, paths))
            c, d = median(checker_times), median(direct_times)
            print(f"{name}: {args.images} images, checker {c:.3f} s, direct {d:.3f} s, ratio {c / d:.2f}x")


if __name__ == "__main__":
    main()
