"""Image preprocessing: a raw image file becomes the tensor the manifest declares.

The declared `steps` run in their order (pipeline.py); the fixed-order fields stand for the steps that
shorthand.py writes out: decode (EXIF orientation applied, RGB, BGR or L) -> resize -> crop -> pad -> scale
-> normalize, then the input's layout and dtype.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from checker.preprocess.image.decode import Decoded, decode
from checker.preprocess.image.pipeline import Memo, run
from checker.preprocess.image.shorthand import spec_steps
from checker.preprocess.image.spec import ImageSpec


def build_image(spec: ImageSpec, path: Path, layout: str, dtype: str, name: str | None = None) -> np.ndarray:
    """The tensor the image at `path` becomes; a batch axis of 1 is added when `layout` has N."""
    return build_decoded(spec, decode(path, name or path.name), layout, dtype)


def build_decoded(spec: ImageSpec, image: Decoded, layout: str, dtype: str, memo: Memo | None = None) -> np.ndarray:
    """The declared steps (or the expansion of the shorthand fields) run on the decoded image."""
    return run(spec_steps(spec), image, layout, dtype, memo, float64=spec.steps is None)
