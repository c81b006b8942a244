"""Image preprocessing: a raw image file becomes the tensor the manifest declares.

The declared `steps` run in their order (pipeline.py); the fixed-order fields stand for the steps that
shorthand.py writes out: decode (EXIF orientation applied, RGB, BGR or L) -> resize -> crop -> pad -> scale
-> normalize, then the input's layout and dtype.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from checker.preprocess.bounds import check_image_size
from checker.preprocess.decode import Decoded, decode
from checker.preprocess.errors import PreprocessError
from checker.preprocess.fields import MAX_SIDE
from checker.preprocess.spec_image import Crop, ImageSpec, Pad, Resize

if TYPE_CHECKING:
    from checker.preprocess.pipeline import Memo

__all__ = ["Crop", "ImageSpec", "Pad", "Resize", "build_decoded", "build_image"]

# The largest tensor image a manifest can ask for: 4096 x 4096.
MAX_OUTPUT_PIXELS = 1 << 24


def build_image(spec: ImageSpec, path: Path, layout: str, dtype: str, name: str | None = None) -> np.ndarray:
    """The tensor the image at `path` becomes; a batch axis of 1 is added when `layout` has N."""
    return build_decoded(spec, decode(path, name or path.name), layout, dtype)


def build_decoded(spec: ImageSpec, image: Decoded, layout: str, dtype: str, memo: Memo | None = None) -> np.ndarray:
    """The declared steps (or the expansion of the shorthand fields) run on the decoded image."""
    from checker.preprocess.pipeline import run
    from checker.preprocess.shorthand import spec_steps

    return run(spec_steps(spec), image, layout, dtype, memo, float64=spec.steps is None)


def check_size(size: tuple[int, int], step: str, channels: int) -> None:
    """The bound on what a manifest can make us allocate: a step's output image, before it is made."""
    h, w = size
    if h > MAX_SIDE or w > MAX_SIDE or h * w > MAX_OUTPUT_PIXELS:
        raise PreprocessError(f"the {step} step would make a {h}x{w} image, more than {MAX_OUTPUT_PIXELS} pixels")
    check_image_size(h, w, channels, step)
