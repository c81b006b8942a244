"""Decode an image file within bounds (bytes, pixels), read its EXIF orientation, convert to RGB or L."""

from __future__ import annotations

import warnings
from dataclasses import InitVar, dataclass, field
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


# EXIF orientations that turn the image a quarter (transposed, rotated 90 or 270 degrees): width and height swap.
_QUARTER_TURNS = (5, 6, 7, 8)


# A decoded image larger than this is let go while another library (OpenCV) decodes the same file, and read
# again when a Pillow step next needs it: a 50-megapixel photograph is 200 MB in Pillow's four bytes a pixel,
# and OpenCV's decode of it takes twice its 150 MB for a moment.
RELEASE_BYTES = 32 << 20


@dataclass(frozen=True)
class Decoded:
    """The first frame of an image file as stored, and upright (EXIF orientation applied) when asked: a turned
    copy of a 50-megapixel photograph is another 150 MB, made only for a step that applies the orientation."""

    first: InitVar[Any]  # the image as decoded; `stored` reads it again from `path` once it has been let go
    orientation: int  # the EXIF tag; 1 means stored upright
    path: Path | None = None  # the file, for a decode step that names another library (OpenCV)
    name: str = ""  # the file as findings name it, for an error while it is read again
    _held: list[Any] = field(default_factory=list, compare=False, repr=False)  # [first] while held
    _turned: list[Any] = field(default_factory=list, compare=False, repr=False)  # the upright image, once made
    # the stored image's (width, height) and mode, known without reading it again once it has been let go
    stored_size: tuple[int, int] = field(init=False, compare=False)
    stored_mode: str = field(init=False, compare=False)

    def __post_init__(self, first: Any) -> None:
        self._held.append(first)  # held here alone, so that `release` lets it go
        object.__setattr__(self, "stored_size", tuple(first.size))
        object.__setattr__(self, "stored_mode", str(first.mode))

    @property
    def stored(self) -> Any:
        if not self._held:
            assert self.path is not None  # only an image read from a file is let go
            self._held.append(_load(self.path, self.name)[0])
        return self._held[0]

    @property
    def upright(self) -> Any:
        if self.orientation == 1:
            return self.stored
        if not self._turned:
            self._turned.append(oriented(self.stored))
        return self._turned[0]

    def size(self, upright: bool) -> tuple[int, int]:
        """(width, height) of the upright or the stored image, from the header: nothing is turned for it."""
        w, h = self.stored_size
        return (h, w) if upright and self.orientation in _QUARTER_TURNS else (w, h)

    def release(self) -> None:
        """Let a large image's pixels go while another library decodes its file (they are read again when next
        asked for); a small one, or one not read from a file, is kept."""
        if self.path is None or not self._held:
            return
        w, h = self.stored_size
        if w * h * 4 > RELEASE_BYTES:
            self._held.clear()
            self._turned.clear()


def decode(path: Path, name: str) -> Decoded:
    """Decode the image at `path`, refusing files and pixel counts beyond the bounds above."""
    _check_file(path, name)
    im, tag = _load(path, name)
    return Decoded(im, tag, path, name)


def _load(path: Path, name: str) -> tuple[Any, int]:
    """The first frame of the image at `path`, loaded, and its EXIF orientation."""
    image = pillow()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", image.DecompressionBombWarning)
            with image.open(path, formats=FORMATS) as im:
                _check_header(im, name)
                im.load()
                # loaded: its pixels outlive the file, which the with-block closes
                return im, orientation(im)
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
