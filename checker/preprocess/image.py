"""Image preprocessing: a raw image file becomes the tensor the manifest declares.

The steps run in the manifest's order: decode (EXIF orientation applied) -> colour conversion -> resize
-> crop -> pad -> channel order -> scale, mean and std -> layout -> dtype.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from checker.preprocess import geometry
from checker.preprocess.bounds import check_image_size
from checker.preprocess.decode import Decoded, decode, to_pixels
from checker.preprocess.errors import PreprocessError
from checker.preprocess.fields import MAX_SIDE
from checker.preprocess.layout import arrange, cast, numpy_dtype
from checker.preprocess.resample import resample
from checker.preprocess.spec_image import Crop, ImageSpec, Pad, Resize

__all__ = ["Crop", "ImageSpec", "Pad", "Resize", "build_decoded", "build_image"]

# The largest tensor image a manifest can ask for: 4096 x 4096.
MAX_OUTPUT_PIXELS = 1 << 24


def build_image(spec: ImageSpec, path: Path, layout: str, dtype: str, name: str | None = None) -> np.ndarray:
    """The tensor the image at `path` becomes; a batch axis of 1 is added when `layout` has N."""
    return build_decoded(spec, decode(path, name or path.name), layout, dtype)


def build_decoded(spec: ImageSpec, image: Decoded, layout: str, dtype: str) -> np.ndarray:
    np_dtype = numpy_dtype(dtype)
    pixels = to_pixels(image.upright if spec.exif else image.stored, spec.color)
    hwc = geometric(spec, pixels)
    return cast(arrange(normalised(spec, hwc), layout), np_dtype)


def geometric(spec: ImageSpec, pixels: np.ndarray) -> np.ndarray:
    """Resize, crop and pad, in pixel units."""
    size = geometry.resize_size(spec.resize, *pixels.shape[:2])
    _check_size(size, "resize", spec.channels)
    out = resample(pixels, size, spec.resize.interpolation, spec.resize.library)
    if spec.crop.mode == "center":
        _check_size(spec.crop.size, "crop", spec.channels)
        out = geometry.center_crop(out, spec.crop)
    if spec.pad.mode == "none":
        return out
    _check_size(spec.pad.size, "pad", spec.channels)
    if spec.pad.mode == "letterbox":
        inner = geometry.letterbox_size(spec.pad.size, *out.shape[:2])
        out = resample(out, inner, spec.resize.interpolation, spec.resize.library)
    return geometry.pad(out, spec.pad, pad_value(spec))


def pad_value(spec: ImageSpec) -> np.ndarray:
    # pad.value is listed in the order of `color`, while padding happens before BGR is reversed.
    value = np.broadcast_to(np.asarray(spec.pad.value, dtype=np.float64), (spec.channels,))
    return value[::-1] if spec.color == "BGR" else value


def normalised(spec: ImageSpec, hwc: np.ndarray) -> np.ndarray:
    """Channel order, then (x * scale - mean) / std per channel."""
    x = hwc.astype(np.float64)
    if spec.color == "BGR":
        x = x[..., ::-1]
    mean = np.asarray(spec.mean, dtype=np.float64)
    std = np.asarray(spec.std, dtype=np.float64)
    return (x * spec.scale - mean) / std


def _check_size(size: tuple[int, int], step: str, channels: int) -> None:
    h, w = size
    if h > MAX_SIDE or w > MAX_SIDE or h * w > MAX_OUTPUT_PIXELS:
        raise PreprocessError(f"the {step} step would make a {h}x{w} image, more than {MAX_OUTPUT_PIXELS} pixels")
    check_image_size(h, w, channels, step)


def describe(spec: ImageSpec) -> dict[str, Any]:
    """The spec as plain data, for a finding's details."""
    return {
        "color": spec.color,
        "resize": [spec.resize.mode, list(spec.resize.size), spec.resize.interpolation, spec.resize.library],
        "crop": [spec.crop.mode, list(spec.crop.size)],
        "pad": [spec.pad.mode, list(spec.pad.size), list(spec.pad.value)],
        "scale": spec.scale,
        "mean": list(spec.mean),
        "std": list(spec.std),
    }
