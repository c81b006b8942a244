"""Output sizes of the resize modes, and crop and pad on H x W x C arrays."""

from __future__ import annotations

import numpy as np

from checker.preprocess.errors import PreprocessError
from checker.preprocess.spec_image import Crop, Pad, Resize


def scaled(length: int, num: int, den: int, rounding: str) -> int:
    """round(length * num / den) in exact integer arithmetic (half up), or its floor; at least 1."""
    if rounding == "floor":
        return max(1, length * num // den)
    return max(1, (2 * length * num + den) // (2 * den))


def resize_size(r: Resize, h0: int, w0: int) -> tuple[int, int]:
    """(h, w) after the resize step, from the decoded (h0, w0)."""
    if r.mode == "exact":
        return r.size[0], r.size[1]
    if r.mode == "fixed_height":
        h, max_w = r.size
        return h, min(max_w, scaled(w0, h, h0, "nearest"))
    if r.mode in ("shorter_side", "longer_side"):
        s = r.size[0]
        height_is_target = (h0 <= w0) == (r.mode == "shorter_side")
        if height_is_target:
            return s, scaled(w0, s, h0, r.rounding)
        return scaled(h0, s, w0, r.rounding), s
    return h0, w0


def letterbox_size(size: tuple[int, int], h0: int, w0: int) -> tuple[int, int]:
    """The largest (h, w) with the aspect ratio of (h0, w0) that fits in `size`."""
    th, tw = size
    if th * w0 <= tw * h0:  # the height limits
        return th, min(tw, scaled(w0, th, h0, "nearest"))
    return min(th, scaled(h0, tw, w0, "nearest")), tw


def center_crop(img: np.ndarray, crop: Crop) -> np.ndarray:
    """As Hugging Face's center_crop: offsets rounded down; a smaller image is zero-padded first."""
    ch, cw = crop.size
    h, w = img.shape[:2]
    if crop.offset == "half_even":
        top, left = round((h - ch) / 2), round((w - cw) / 2)
    else:
        top, left = (h - ch) // 2, (w - cw) // 2
    if top >= 0 and left >= 0:
        return img[top : top + ch, left : left + cw]
    nh, nw = max(h, ch), max(w, cw)
    top_pad, left_pad = -(-(nh - h) // 2), -(-(nw - w) // 2)  # ceil
    canvas = np.zeros((nh, nw, *img.shape[2:]), dtype=img.dtype)
    canvas[top_pad : top_pad + h, left_pad : left_pad + w] = img
    top, left = top + top_pad, left + left_pad
    return canvas[max(0, top) : min(nh, top + ch), max(0, left) : min(nw, left + cw)]


def pad(img: np.ndarray, p: Pad, value: np.ndarray) -> np.ndarray:
    """Place `img` on a canvas of `p.size` filled with `value` (one entry per channel of `img`)."""
    th, tw = p.size
    h, w = img.shape[:2]
    if h > th or w > tw:
        raise PreprocessError(f"the image is {h}x{w} before padding, larger than pad.size {th}x{tw}")
    top, left = (0, 0) if p.mode == "bottom_right" else ((th - h) // 2, (tw - w) // 2)
    canvas = np.empty((th, tw, img.shape[2]), dtype=np.float64)
    canvas[...] = value
    canvas[top : top + h, left : left + w] = img
    return canvas
