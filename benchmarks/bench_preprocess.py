"""Rebuilding raw images with declared steps, as `checker verify` does, against the same pipeline written directly.

    python benchmarks/bench_preprocess.py [--images 200] [--repeat 9] [--only classifier|ocr]

Target: the checker rebuilds N raw images in <= 1.2x the time of the same pipeline written directly in
Pillow or OpenCV and NumPy. Two pipelines: a classifier's (Pillow: shorter side 256, centre crop 224, /255,
ImageNet mean and std) and an OCR line recogniser's (OpenCV linear resize to height 48 with PaddleOCR's
width rule, /255, -0.5, /0.5, zeros padded to at least 320 after normalising, as rapidocr-onnxruntime writes
it). Both sides decode every file with Pillow and make the same float32 tensors: every image is compared
first (the largest difference is printed), which also warms both up. Then each round takes every image
through both sides back to back, the first side alternating from image to image, so that other work on a
shared machine falls on both alike; the medians over rounds of wall time, of CPU time (steadier under load)
and of the per-round ratios are printed.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import skimage.data
from material import median
from PIL import Image

from checker.preprocess.image.source import ImageSource
from checker.preprocess.rebuild import Inputs, open_source

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
CLASSIFIER = (
    [
        {"decode": {"mode": "RGB"}},
        {"resize": {"shorter_side": 256, "rounding": "floor"}},
        {"crop": {"center": [224, 224]}},
        {"scale": 1 / 255},
        {"normalize": {"mean": list(MEAN), "std": list(STD)}},
    ],
    [1, 3, 224, 224],
)
OCR_LINE = (
    [
        {"decode": {"mode": "BGR"}},
        {"resize": {"ppocr_line": {"height": 48, "min_width": 320}, "library": "opencv", "filter": "linear"}},
        {"scale": 1 / 255},
        {"normalize": {"mean": [0.5], "std": [0.5]}},
        {"pad": {"at_least": [None, 320], "position": "top_left", "value": 0}},
    ],
    [1, 3, 48, "width"],
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
    """As rapidocr-onnxruntime's recogniser does it (tests/preprocess/oracles.py), on the same decode as the
    checker's: Pillow, convert("RGB"), then to BGR."""
    with Image.open(path) as im:
        img = cv2.cvtColor(np.asarray(im.convert("RGB")), cv2.COLOR_RGB2BGR)
    h, w = img.shape[:2]
    width = max(320, int(48 * w / h))
    resized_w = min(width, math.ceil(48 * w / h))
    x = cv2.resize(img, (resized_w, 48)).astype(np.float32).transpose(2, 0, 1) / 255
    x -= 0.5
    x /= 0.5
    out = np.zeros((3, 48, width), np.float32)
    out[:, :, :resized_w] = x
    return out[None]


def checker_side(pipeline: tuple[list[dict[str, Any]], list[Any]], root: Path) -> Callable[[Path], np.ndarray]:
    """What `checker verify` does with a case's raw file: open it as the manifest's input declares (the
    bounded decode), then build the tensor."""
    steps, shape = pipeline
    entry = {"name": "x", "dtype": "float32", "shape": shape, "preprocessing": {"kind": "image", "steps": steps}}
    inputs = Inputs([entry], root)

    def rebuild(path: Path) -> np.ndarray:
        source = open_source(inputs, "x", path, path.name)
        assert isinstance(source, ImageSource)
        return source.build()["x"]

    return rebuild


@dataclass
class Round:
    """One pass over the images: wall and CPU seconds of each side."""

    wall: list[float] = field(default_factory=lambda: [0.0, 0.0])
    cpu: list[float] = field(default_factory=lambda: [0.0, 0.0])


def one_round(sides: tuple[Callable[[Path], np.ndarray], ...], paths: list[Path]) -> Round:
    """Each image goes through both sides back to back, the first side alternating from image to image, so
    that other work on the machine falls on both alike."""
    out = Round()
    for i, path in enumerate(paths):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            wall, cpu = time.perf_counter(), time.process_time()
            sides[k](path)
            out.cpu[k] += time.process_time() - cpu
            out.wall[k] += time.perf_counter() - wall
    return out


def same_tensors(ours: Callable[[Path], np.ndarray], direct: Callable[[Path], np.ndarray], paths: list[Path]) -> float:
    """The largest difference over every image (also the warm-up): the two sides make the same tensors."""
    worst = 0.0
    for path in paths:
        a, b = ours(path), direct(path)
        assert a.shape == b.shape and a.dtype == b.dtype, (path.name, a.shape, b.shape, a.dtype, b.dtype)
        worst = max(worst, float(np.abs(a - b).max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=9, help="rounds over the images; medians are reported")
    parser.add_argument("--only", choices=("classifier", "ocr"), help="one pipeline")
    args = parser.parse_args()
    cv2.setNumThreads(1)  # both sides alike, and steadier on a shared machine
    with tempfile.TemporaryDirectory() as tmp:
        for name, line, steps, direct in (
            ("classifier (Pillow)", False, CLASSIFIER, direct_classifier),
            ("OCR line (OpenCV)", True, OCR_LINE, direct_ocr_line),
        ):
            if args.only and args.only not in name.lower():
                continue
            paths = write_images(Path(tmp), args.images, line)
            ours = checker_side(steps, Path(tmp))
            worst = same_tensors(ours, direct, paths)
            assert worst <= 1e-5, (name, worst)  # float32 rounding apart (x * (1/255) against x / 255)
            rounds = [one_round((ours, direct), paths) for _ in range(args.repeat)]
            report(name, args.images, worst, rounds)


def report(name: str, images: int, worst: float, rounds: list[Round]) -> None:
    for what in ("wall", "cpu"):
        pairs = [getattr(r, what) for r in rounds]
        ratios = sorted(c / d for c, d in pairs)
        c, d = median([p[0] for p in pairs]), median([p[1] for p in pairs])
        print(
            f"{name}, {what:4}: {images} images x {len(rounds)} rounds, checker {c:.3f} s, direct {d:.3f} s, "
            f"ratio {median(ratios):.2f}x (per round {ratios[0]:.2f}-{ratios[-1]:.2f})"
        )
    print(f"{name}: largest difference between the two sides' tensors {worst:.2g}")


if __name__ == "__main__":
    main()
