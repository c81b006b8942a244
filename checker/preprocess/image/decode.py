"""Decode an image file within bounds (bytes, pixels), read its EXIF orientation, convert to RGB or L."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.bundle.paths import regular_size
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.resample import pillow

MAX_FILE_BYTES = 100 << 20
MAX_PIXELS = 50_000_000  # a 50-megapixel photograph; 150 MB once decoded
# The raster formats applications feed to models, decoded in-process. Pillow would otherwise also try every
# plugin it has, EPS among them, which runs Ghostscript on the file: PostScript from a pull request.
FORMATS = ("PNG", "JPEG", "BMP", "GIF", "TIFF", "WEBP", "PPM")  # JPEG covers multi-picture (MPO) files
# 8-bit modes; wider ones (I;16, I, F) would be clipped by a conversion to RGB, which no application means.
_MODES = {"1", "L", "LA", "La", "P", "PA", "RGB", "RGBA", "RGBa", "RGBX", "CMYK", "YCbCr"}


@dataclass(frozen=True)
class Decoded:
    """The first frame of an image file, upright (EXIF orientation applied) and as stored."""

    upright: Any
    stored: Any
    orientation: int  # the EXIF tag; 1 means stored upright
    path: Path | None = None  # the file, for a decode step that names another library (OpenCV)


def decode(path: Path, name: str) -> Decoded:
    """Decode the image at `path`, refusing files and pixel counts beyond the bounds above."""
    image = pillow()
    _check_file(path, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", image.DecompressionBombWarning)
            with image.open(path, formats=FORMATS) as im:
                _check_header(im, name)
                im.load()
                tag = orientation(im)
                stored = im  # loaded: its pixels outlive the file, which the with-block closes
                return Decoded(oriented(im) if tag != 1 else stored, stored, tag, path)
    except image.UnidentifiedImageError as e:
        raise PreprocessError(f"{name} cannot be decoded as an image: not {', '.join(FORMATS)}") from e
    except (
        OSError,
        ValueError,
        SyntaxError,
        image.DecompressionBombError,
        image.DecompressionBombWarning,
    ) as e:
        raise PreprocessError(f"{name} cannot be decoded as an image: {e}") from e


def _check_file(path: Path, name: str) -> None:
    try:
        size = regular_size(path)
    except OSError as e:
        raise PreprocessError(f"{name} cannot be read: {e.strerror}") from e
    if size > MAX_FILE_BYTES:
        raise PreprocessError(f"{name} is {size} bytes, more than the {MAX_FILE_BYTES} bytes a raw image may be")


def _check_header(im: Any, name: str) -> None:
    w, h = im.size
    if w * h > MAX_PIXELS:
        raise PreprocessError(f"{name} is {w}x{h} pixels, more than the {MAX_PIXELS} a raw image may have")
    if im.mode not in _MODES:
        raise PreprocessError(f"{name} has pixel mode {im.mode}; only 8-bit images are rebuilt")


def oriented(im: Any) -> Any:
    """`im` turned upright as its EXIF orientation tag says (applications display it so)."""
    from PIL import ImageOps  # Pillow is loaded by the first image decoded, never for a bundle without one

    try:
        return ImageOps.exif_transpose(im)
    except (OSError, ValueError, SyntaxError) as e:
        raise PreprocessError(f"the EXIF orientation cannot be applied: {e}") from e


def orientation(im: Any) -> int:
    """The EXIF orientation tag of a decoded image (1, upright, when absent)."""
    try:
        value = im.getexif().get(0x0112, 1)
    except (OSError, ValueError, SyntaxError):
        return 1
    return value if isinstance(value, int) else 1
