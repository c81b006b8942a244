"""Resizing as the application's library does it: Pillow (antialiased when shrinking), OpenCV, torch, or a
browser canvas's drawImage."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np

from checker.preprocess.errors import CannotReproduce, MissingExtra, MissingLibrary


def pillow() -> Any:
    """The PIL.Image module, or MissingExtra."""
    try:
        from PIL import Image  # an optional extra ([image]), loaded by the first image step that needs it
    except ImportError as e:
        raise MissingExtra("image", "Pillow") from e
    return Image


def resample(img: np.ndarray, size: tuple[int, int], interpolation: str, library: str) -> np.ndarray:
    """`img` (H x W x C) resized to `size` (h, w)."""
    if img.shape[:2] == size and library == "pillow":
        return img  # Pillow returns a copy of the same pixels; skip the work
    if library == "opencv":
        return _opencv(img, size, interpolation)
    if library == "torch":
        return _torch(img, size, interpolation)
    return _pillow(img, size, interpolation)


def _pillow(img: np.ndarray, size: tuple[int, int], interpolation: str) -> np.ndarray:
    image = pillow()
    flt = getattr(image.Resampling, interpolation.upper())
    box = (size[1], size[0])
    if img.dtype == np.uint8 and img.shape[2] > 1 and img.nbytes > PER_BAND_BYTES:
        return pillow_per_band(img, size, interpolation)
    if img.dtype == np.uint8:
        pil = image.fromarray(img[..., 0] if img.shape[2] == 1 else img)
        out = np.asarray(pil.resize(box, resample=flt))
        return out.reshape(size[0], size[1], img.shape[2])
    # Non-8-bit pixels (after a zero-padded crop or a torch resize) resize per channel in 32-bit float.
    planes = [
        np.asarray(image.fromarray(img[..., c].astype(np.float32), "F").resize(box, flt)) for c in range(img.shape[2])
    ]
    return np.stack(planes, axis=-1)


# Above this, 8-bit colour pixels are resized one band at a time: Pillow keeps RGB in four bytes a pixel, so an
# image made of a 50-megapixel array is 200 MB besides the array's 150 MB; one band is 50 MB.
PER_BAND_BYTES = 32 << 20


def pillow_per_band(img: np.ndarray, size: tuple[int, int], interpolation: str) -> np.ndarray:
    """`img` (8-bit, H x W x C) resized by Pillow one band at a time as an L image: the same pixels as the colour
    image resized whole, since Pillow resamples each band of an 8-bit image with the same integer kernel."""
    image = pillow()
    flt = getattr(image.Resampling, interpolation.upper())
    out = np.empty((size[0], size[1], img.shape[2]), np.uint8)
    for c in range(img.shape[2]):
        band = image.fromarray(np.ascontiguousarray(img[..., c]))
        out[..., c] = np.asarray(band.resize((size[1], size[0]), resample=flt))
    return out


_CV2_FLAGS = {
    "nearest": "INTER_NEAREST",
    "bilinear": "INTER_LINEAR",
    "bicubic": "INTER_CUBIC",
    "lanczos": "INTER_LANCZOS4",
}


def _opencv(img: np.ndarray, size: tuple[int, int], interpolation: str) -> np.ndarray:
    if interpolation not in _CV2_FLAGS:
        raise CannotReproduce(f"resize.library is opencv, which has no {interpolation} interpolation")
    try:
        cv2 = importlib.import_module("cv2")
    except ImportError as e:
        raise CannotReproduce(
            "resize.library is opencv, and OpenCV is not installed here, so the checker cannot reproduce its "
            "resize (install opencv-python-headless to check it)"
        ) from e
    src = img if img.dtype == np.uint8 else img.astype(np.float32)
    out = cv2.resize(src, (size[1], size[0]), interpolation=getattr(cv2, _CV2_FLAGS[interpolation]))
    return np.asarray(out).reshape(size[0], size[1], img.shape[2])


def _torch(img: np.ndarray, size: tuple[int, int], interpolation: str) -> np.ndarray:
    if interpolation not in ("nearest", "bilinear", "bicubic"):
        raise CannotReproduce(f"resize.library is torch, which has no {interpolation} interpolation")
    try:
        torch = importlib.import_module("torch")
        functional = importlib.import_module("torch.nn.functional")
    except ImportError as e:
        raise CannotReproduce(
            "resize.library is torch, and torch is not installed here, so the checker cannot reproduce its resize"
        ) from e
    x = torch.from_numpy(_writable(img, np.float32)).permute(2, 0, 1)[None]
    align = None if interpolation == "nearest" else False
    y = functional.interpolate(x, size=size, mode=interpolation, align_corners=align, antialias=False)
    return np.asarray(y[0].permute(1, 2, 0).numpy(), dtype=np.float64)


# The resize step: each library with its own filter names (steps.FILTERS), no translation between them.

_OPENCV_FILTERS = {
    "nearest": "INTER_NEAREST",
    "nearest_exact": "INTER_NEAREST_EXACT",
    "linear": "INTER_LINEAR",
    "cubic": "INTER_CUBIC",
    "area": "INTER_AREA",
    "lanczos4": "INTER_LANCZOS4",
}


def opencv(use: str = "a step with library: opencv") -> Any:
    """The cv2 module, or MissingLibrary naming the extra that installs it."""
    loaded = sys.modules.get("cv2")  # once per image step: a dictionary look-up, not the import machinery
    if loaded is not None:
        return loaded
    try:
        return importlib.import_module("cv2")
    except ImportError as e:
        raise MissingLibrary("opencv", "OpenCV", use) from e


def torchvision_functional() -> Any:
    try:
        return importlib.import_module("torchvision.transforms.v2.functional")
    except ImportError as e:
        raise MissingLibrary("torch", "torchvision", "a resize with library: torchvision") from e


def resize_with(img: np.ndarray, size: tuple[int, int], library: str, filt: str, antialias: bool) -> np.ndarray:
    """`img` (H x W x C) resized to `size` (h, w) by `library` with its filter `filt`."""
    if img.shape[:2] == size:
        return img  # every library copies the same pixels when the size does not change
    if library == "opencv":
        cv2 = opencv()
        src = img if img.dtype in (np.uint8, np.float32) else img.astype(np.float32)
        out = cv2.resize(src, (size[1], size[0]), interpolation=getattr(cv2, _OPENCV_FILTERS[filt]))
        return np.asarray(out).reshape(size[0], size[1], img.shape[2])
    if library == "torchvision":
        return _torchvision(img, size, filt, antialias)
    if library == "torch":
        return _torch(img, size, filt)
    if library == "canvas":
        return canvas(img, size, filt)
    return _pillow(img, size, filt)


def canvas(img: np.ndarray, size: tuple[int, int], filt: str) -> np.ndarray:
    """`img` drawn onto an h x w canvas by drawImage, as Chromium's Skia draws it on the CPU (its bitmap sampler,
    measured pixel for pixel against Chromium: tests/preprocess/test_canvas.py). Each output pixel's centre is
    mapped back through the float inverse of the scale w / W and stepped along a row in 32.32 fixed point;
    `bilinear` (imageSmoothingQuality "low", the default) weighs the four pixels around it with weights in
    sixteenths and truncates the sum to 8 bits; `nearest` (imageSmoothingEnabled = false) takes the pixel the
    centre falls in, biased down by 1/65536. No mipmaps, no antialias."""
    bilinear = filt != "nearest"
    fx = _canvas_row(size[1], img.shape[1], bilinear)
    fy = _canvas_column(size[0], img.shape[0], bilinear)
    height, width = img.shape[0] - 1, img.shape[1] - 1
    if not bilinear:
        picked: np.ndarray = img[np.clip(fy >> 16, 0, height)][:, np.clip(fx >> 16, 0, width)]
        return picked
    left, right = np.clip(fx >> 16, 0, width), np.clip((fx + 65536) >> 16, 0, width)
    top, bottom = np.clip(fy >> 16, 0, height), np.clip((fy + 65536) >> 16, 0, height)
    sx, sy = ((fx >> 12) & 15)[None, :, None], ((fy >> 12) & 15)[:, None, None]
    exact = img.dtype == np.uint8
    work = np.int64 if exact else np.float64

    def tap(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        # Only the sampled pixels are widened: a copy of a 50-megapixel image in int64 would be 1.2 GB.
        taken: np.ndarray = img[rows][:, cols].astype(work)
        return taken

    total = (
        tap(top, left) * (16 - sx) * (16 - sy)
        + tap(top, right) * sx * (16 - sy)
        + tap(bottom, left) * (16 - sx) * sy
        + tap(bottom, right) * sx * sy
    )
    out: np.ndarray = (total >> 8).astype(np.uint8) if exact else (total / 256).astype(np.float32)
    return out


_FRACTION = float(1 << 32)  # Skia's SkFractionalInt: 32.32 fixed point


def _canvas_inverse(n_out: int, n_in: int) -> np.float32:
    scale = np.float32(n_out) / np.float32(n_in)
    inverse: np.float32 = np.float32(1) / scale
    return inverse


def _canvas_row(n_out: int, n_in: int, bilinear: bool) -> np.ndarray:
    """Along a row, 16.16 source positions: the first pixel's centre mapped in float, then a fixed step."""
    inverse = _canvas_inverse(n_out, n_in)
    start = int(np.trunc(float(np.float32(0.5) * inverse) * _FRACTION))
    step = int(np.trunc(float(inverse) * _FRACTION))
    bias = 1 << 31 if bilinear else 1 << 16  # half a pixel back for the filter; one 1/65536 for nearest
    row: np.ndarray = (start - bias + np.arange(n_out, dtype=np.int64) * step) >> 16
    return row


def _canvas_column(n_out: int, n_in: int, bilinear: bool) -> np.ndarray:
    """Down the rows, 16.16 source positions: each row's centre mapped in float."""
    centres = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * _canvas_inverse(n_out, n_in)
    bias = 1 << 31 if bilinear else 1 << 16
    column: np.ndarray = (np.trunc(centres.astype(np.float64) * _FRACTION).astype(np.int64) - bias) >> 16
    return column


def _torchvision(img: np.ndarray, size: tuple[int, int], filt: str, antialias: bool) -> np.ndarray:
    functional = torchvision_functional()
    torch = importlib.import_module("torch")
    modes = importlib.import_module("torchvision.transforms").InterpolationMode
    src = _writable(img, img.dtype if img.dtype in (np.uint8, np.float32) else np.float32)
    x = torch.from_numpy(src).permute(2, 0, 1)
    y = functional.resize(x, list(size), interpolation=getattr(modes, filt.upper()), antialias=antialias)
    return np.ascontiguousarray(y.permute(1, 2, 0).numpy())


def _writable(img: np.ndarray, dtype: Any) -> np.ndarray:
    """`img` as a contiguous, writable array of `dtype`: torch warns on a read-only array (decoded pixels are
    read-only views of the image), so those are copied."""
    return np.require(img, dtype=dtype, requirements=["C", "W"])
