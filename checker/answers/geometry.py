"""`to_raw`: the input's declared geometry (resize, crop, pad, letterbox, conditional steps) followed from the raw
file's size to the tensor's, as one scale and offset per axis, so that boxes and masks in the tensor's pixels are
taken back into the raw file's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from checker.answers.errors import AnswerError
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image import geometry as geo
from checker.preprocess.image.steps import Crop, Decode, Pad, Resize, Step

# EXIF orientations that turn the image a quarter: the upright image is the stored one's height by width.
_QUARTER_TURNS = (5, 6, 7, 8)


@dataclass(frozen=True)
class Placement:
    """Where the raw image lies in the tensor: tensor = raw * scale + offset per axis (x, then y), the raw size and
    the tensor's."""

    scale: tuple[float, float]
    offset: tuple[float, float]
    raw: tuple[int, int]  # height, width of the raw image as decoded (upright when the decode applies EXIF)
    tensor: tuple[int, int]  # height, width the steps make

    def to_raw(self, boxes: np.ndarray) -> np.ndarray:
        """[N, 4] corner boxes in the tensor's pixels, in the raw file's, clipped to it."""
        (sx, sy), (ox, oy) = self.scale, self.offset
        out: np.ndarray = np.array(boxes, np.float64)
        out[:, [0, 2]] = (out[:, [0, 2]] - ox) / sx
        out[:, [1, 3]] = (out[:, [1, 3]] - oy) / sy
        h, w = self.raw
        out[:, [0, 2]] = np.clip(out[:, [0, 2]], 0, w)
        out[:, [1, 3]] = np.clip(out[:, [1, 3]], 0, h)
        return out

    def to_tensor(self, boxes: np.ndarray) -> np.ndarray:
        """The other way: raw pixels into the tensor's (for the explanation 'the geometry undone twice')."""
        (sx, sy), (ox, oy) = self.scale, self.offset
        out: np.ndarray = np.array(boxes, np.float64)
        out[:, [0, 2]] = out[:, [0, 2]] * sx + ox
        out[:, [1, 3]] = out[:, [1, 3]] * sy + oy
        return out

    def mask_to_raw(self, labels: np.ndarray) -> np.ndarray:
        """A label map over the tensor's pixels, sampled at each raw pixel's centre (nearest)."""
        h, w = self.raw
        (sx, sy), (ox, oy) = self.scale, self.offset
        ys = np.floor((np.arange(h) + 0.5) * sy + oy).astype(np.int64)
        xs = np.floor((np.arange(w) + 0.5) * sx + ox).astype(np.int64)
        th, tw = labels.shape[-2:]
        inside = (ys[:, None] >= 0) & (ys[:, None] < th) & (xs[None, :] >= 0) & (xs[None, :] < tw)
        out: np.ndarray = labels[np.clip(ys, 0, th - 1)[:, None], np.clip(xs, 0, tw - 1)[None, :]]
        return np.where(inside, out, 0)


def placement(steps: tuple[Step, ...], height: int, width: int) -> Placement:
    """How `steps` place an image of height x width: each resize scales, each crop and pad shifts; a step whose
    `when` does not hold is passed over, as the pipeline passes it over."""
    sx = sy = 1.0
    ox = oy = 0.0
    h, w = height, width
    try:
        for step in steps:
            when = getattr(step, "when", None)
            if when is not None and not when.holds(h, w):
                continue
            if isinstance(step, Resize):
                nh, nw = geo.resize_size(step, h, w)
                fx, fy = nw / w, nh / h
                sx, ox, sy, oy = sx * fx, ox * fx, sy * fy, oy * fy
                h, w = nh, nw
            elif isinstance(step, Crop):
                (dy, dx), (h, w) = _crop_shift(step, h, w)
                ox, oy = ox + dx, oy + dy
            elif isinstance(step, Pad):
                top, _, left, _, h, w = geo.pad_offsets(step, h, w)
                ox, oy = ox + left, oy + top
    except PreprocessError as exc:
        raise AnswerError(f"the input's geometry cannot be followed for a {height}x{width} image: {exc}") from exc
    return Placement((sx, sy), (ox, oy), (height, width), (h, w))


def _crop_shift(step: Crop, h: int, w: int) -> tuple[tuple[int, int], tuple[int, int]]:
    box = geo.crop_box(step, h, w)
    if box is not None:
        top, left, ch, cw = box
        return (-top, -left), (ch, cw)
    centred = geo.centred_offsets(step, h, w)
    if centred is None or step.center is None:
        raise AnswerError(f"crop {step.words()} reaches outside a {h}x{w} image")
    top_pad, left_pad, top, left = centred
    return (top_pad - top, left_pad - left), step.center


def raw_size(path: Path, name: str, steps: tuple[Step, ...]) -> tuple[int, int]:
    """The raw image's height and width as the declared decode sees it (EXIF orientation applied or not), read
    from its header."""
    from checker.preprocess.image.decode import FORMATS, MAX_PIXELS, orientation
    from checker.preprocess.image.resample import pillow

    image = pillow()
    decode = steps[0] if steps and isinstance(steps[0], Decode) else Decode()
    try:
        with image.open(path, formats=FORMATS) as im:
            w, h = im.size
            turned = orientation(im) in _QUARTER_TURNS
    except (OSError, ValueError, SyntaxError, image.UnidentifiedImageError, image.DecompressionBombError) as exc:
        raise AnswerError(f"{name} cannot be read as an image: {exc}") from exc
    if w * h > MAX_PIXELS:
        raise AnswerError(f"{name} is {w}x{h} pixels, more than the {MAX_PIXELS} a raw image may have")
    return (w, h) if (turned and decode.applies_exif) else (h, w)
