"""Sizes the resize steps compute, with their rounding and arithmetic, and crop and pad on H x W x C arrays."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.steps import Crop, Pad, Resize, Step

Number = Fraction | float


def ratio(length: int, num: float, den: int, arithmetic: str) -> Number:
    """`length * num / den` computed as the application computes it (see the spec's `arithmetic`)."""
    if arithmetic == "float_scale_first":
        return float(length) * (float(num) / float(den))
    if arithmetic == "float_product_first":
        return (float(num) * float(length)) / float(den)
    if isinstance(num, int):
        return Fraction(length * num, den)
    return Fraction(length) * Fraction(repr(num)) / den


def rounded(x: Number, rounding: str) -> int:
    if rounding == "floor":
        value = math.floor(x)
    elif rounding == "ceil":
        value = math.ceil(x)
    elif rounding == "half_even":
        value = round(x)
    else:  # half_up
        value = math.floor(x + Fraction(1, 2) if isinstance(x, Fraction) else x + 0.5)
    return max(1, int(value))


def resize_size(r: Resize, h0: int, w0: int) -> tuple[int, int]:
    """(h, w) the resize step makes of an image of (h0, w0)."""
    if r.ppocr_line is not None:
        h, min_w = r.ppocr_line
        if r.arithmetic == "exact":  # the true quotient's floor and ceiling in integers, with no Fraction built
            low, high = (w0 * h) // h0, -(-(w0 * h) // h0)
        else:
            x = ratio(w0, h, h0, r.arithmetic)
            low, high = math.floor(x), math.ceil(x)
        return h, max(1, min(high, max(min_w, low)))
    h, w = _computed(r, h0, w0)
    if r.multiple_of is not None and r.size is None:
        # n * max(1, m(s / n)), m rounding the exact quotient: Python's round(s / 32) is half-even on it, as
        # an integer over a power of two is exact in float64
        n, m = r.multiple_of, r.multiple_of_rounding or r.rounding
        h, w = (rounded(Fraction(side, n), m) * n for side in (h, w))
    return h, w


def _computed(r: Resize, h0: int, w0: int) -> tuple[int, int]:
    def side(length: int, num: float, den: int) -> int:
        return rounded(ratio(length, num, den, r.arithmetic), r.rounding)

    if r.size is not None:
        return r.size
    if r.scale is not None:
        return side(h0, r.scale, 1), side(w0, r.scale, 1)
    if r.height is not None:
        w = side(w0, r.height, h0)
        return r.height, _clamp(w, r.min_width, r.max_width)
    if r.width is not None:
        h = side(h0, r.width, w0)
        return _clamp(h, r.min_height, r.max_height), r.width
    if r.fit is not None:
        th, tw = r.fit
        if th * w0 <= tw * h0:  # the height limits
            return th, min(tw, side(w0, th, h0))
        return min(th, side(h0, tw, w0)), tw
    short0, long0 = min(h0, w0), max(h0, w0)
    if r.shorter_side is not None:
        short, long = r.shorter_side, side(long0, r.shorter_side, short0)
        if r.max_longer is not None and long > r.max_longer:
            # from the sides just computed, as torchvision's max_size (and Hugging Face's copy of it) does:
            # int(max_size * new_short / new_long), where new_long was itself truncated
            short, long = side(short, r.max_longer, long), r.max_longer
    else:
        n = r.longer_side or long0
        short, long = side(short0, n, long0), n
    return (short, long) if h0 <= w0 else (long, short)


def _clamp(value: int, low: int | None, high: int | None) -> int:
    if low is not None:
        value = max(low, value)
    if high is not None:
        value = min(high, value)
    return value


def crop_box(c: Crop, h: int, w: int) -> tuple[int, int, int, int] | None:
    """(top, left, height, width) the crop cuts from an h x w image; None when it would pad or reach out."""
    if c.box is not None:
        top, left, ch, cw = c.box
        return c.box if top + ch <= h and left + cw <= w else None
    ch, cw = c.center or (h, w)
    if ch > h or cw > w:
        return None
    return _offset(h - ch, c.offset_rounding), _offset(w - cw, c.offset_rounding), ch, cw


def crop(img: np.ndarray, c: Crop) -> np.ndarray:
    """The crop step on H x W x C pixels."""
    h, w = img.shape[:2]
    if c.box is not None:
        top, left, ch, cw = c.box
        if top + ch > h or left + cw > w:
            raise PreprocessError(f"crop box {list(c.box)} reaches outside the {h}x{w} image")
        return img[top : top + ch, left : left + cw]
    ch, cw = c.center or (h, w)
    if ch > h or cw > w:
        if c.pad_if_smaller is None:
            raise PreprocessError(f"the image is {h}x{w}, smaller than the {ch}x{cw} crop (no pad_if_smaller)")
        img = _centred(img, ch, cw, c.pad_if_smaller, odd_after=c.offset_rounding == "half_even")
        h, w = img.shape[:2]
    top, left = _offset(h - ch, c.offset_rounding), _offset(w - cw, c.offset_rounding)
    return img[top : top + ch, left : left + cw]


def _offset(extra: int, rounding: str) -> int:
    return round(extra / 2) if rounding == "half_even" else extra // 2


def _centred(img: np.ndarray, ch: int, cw: int, fill: tuple[float, ...], odd_after: bool) -> np.ndarray:
    """The image on a canvas at least the crop's size: the odd row and column of padding before it, as Hugging
    Face's center_crop pads, or after it, as torchvision's CenterCrop pads (`odd_after`; the crop that rounds its
    offsets half to even)."""
    h, w = img.shape[:2]
    nh, nw = max(h, ch), max(w, cw)
    if odd_after:
        top_pad, left_pad = (nh - h) // 2, (nw - w) // 2
    else:
        top_pad, left_pad = -(-(nh - h) // 2), -(-(nw - w) // 2)  # ceil
    canvas = _canvas((nh, nw, img.shape[2]), img.dtype, fill)
    canvas[top_pad : top_pad + h, left_pad : left_pad + w] = img
    return canvas


def _canvas(shape: tuple[int, int, int], dtype: np.dtype, fill: tuple[float, ...]) -> np.ndarray:
    """A canvas filled with `fill` (one value, or one per channel); uint8 stays uint8 only for 8-bit values."""
    values = fill * shape[2] if len(fill) == 1 else fill
    integral = dtype == np.uint8 and all(float(v).is_integer() and 0 <= v <= 255 for v in values)
    out_dtype = dtype if integral or dtype.kind == "f" else np.dtype(np.float32)
    if len(set(values)) == 1:
        if values[0] == 0 and math.copysign(1.0, values[0]) > 0:
            return np.zeros(shape, dtype=out_dtype)  # already zero from the allocator, where a fill writes
        return np.full(shape, values[0], dtype=out_dtype)
    canvas = np.empty(shape, dtype=out_dtype)
    canvas[...] = values
    return canvas


def pad_amounts(p: Pad, h: int, w: int) -> tuple[int, int]:
    """The padded (h, w)."""
    if p.to is not None:
        th, tw = p.to
        if h > th or w > tw:
            raise PreprocessError(
                f"the image is {h}x{w} before padding, larger than pad.size (pad.to in steps) {th}x{tw}"
            )
        return th, tw
    if p.multiple_of is not None:
        n = p.multiple_of
        return -(-h // n) * n, -(-w // n) * n
    lh, lw = p.at_least or (None, None)
    return max(h, lh or 0), max(w, lw or 0)


def _split(extra: int, where: str, odd: str) -> tuple[int, int]:
    """(before, after) of `extra` rows or columns, for content placed at `where` (start, middle or end)."""
    if where == "start":
        return 0, extra
    if where == "end":
        return extra, 0
    small = extra // 2
    return (small, extra - small) if odd == "end" else (extra - small, small)


def pad_offsets(p: Pad, h: int, w: int) -> tuple[int, int, int, int, int, int]:
    """Where the pad step puts an h x w image: (top, bottom, left, right, padded h, padded w)."""
    th, tw = pad_amounts(p, h, w)
    vertical = "start" if "top" in p.position else "end" if "bottom" in p.position else "middle"
    horizontal = "start" if "left" in p.position else "end" if "right" in p.position else "middle"
    top, bottom = _split(th - h, vertical, p.odd)
    left, right = _split(tw - w, horizontal, p.odd)
    return top, bottom, left, right, th, tw


def centred_offsets(c: Crop, h: int, w: int) -> tuple[int, int, int, int] | None:
    """A centre crop that pads an image smaller than itself: (top, left) of the image on the padded canvas and
    (top, left) of the crop on it; None for a crop that does not pad."""
    if c.center is None or c.pad_if_smaller is None:
        return None
    ch, cw = c.center
    nh, nw = max(h, ch), max(w, cw)
    if c.offset_rounding == "half_even":
        top_pad, left_pad = (nh - h) // 2, (nw - w) // 2
    else:
        top_pad, left_pad = -(-(nh - h) // 2), -(-(nw - w) // 2)
    return top_pad, left_pad, _offset(nh - ch, c.offset_rounding), _offset(nw - cw, c.offset_rounding)


def pad(img: np.ndarray, p: Pad) -> np.ndarray:
    """The pad step on H x W x C pixels (the value in the units the pixels have)."""
    h, w = img.shape[:2]
    top, bottom, left, right, th, tw = pad_offsets(p, h, w)
    if p.mode != "constant":
        if p.mode in ("reflect", "symmetric") and (top >= h or bottom >= h or left >= w or right >= w):
            raise PreprocessError(f"pad mode {p.mode} needs the image ({h}x{w}) larger than what it adds")
        padded: np.ndarray = np.pad(img, ((top, bottom), (left, right), (0, 0)), mode=p.mode)  # type: ignore[call-overload]
        return padded
    canvas = _canvas((th, tw, img.shape[2]), img.dtype, p.value)
    canvas[top : top + h, left : left + w] = img
    return canvas


def planned_size(steps: tuple[Step, ...], h: int, w: int) -> tuple[int, int] | None:
    """The height and width `steps` make of an h x w image, from the sizes alone; None when a step cannot say
    (it would fail: running it says why)."""
    try:
        for step in steps:
            when = getattr(step, "when", None)
            if when is not None and not when.holds(h, w):
                continue
            h, w = step.size_after(h, w)
    except PreprocessError:
        return None
    return h, w
