"""From an H x W x C array to the input's declared layout and dtype."""

from __future__ import annotations

from typing import Any

import numpy as np

from checker.preprocess.errors import PreprocessError

_UNSUPPORTED_DTYPES = ("bool", "bfloat16", "string")


def image_layout(layout: Any, shape: Any) -> str:
    """The input's layout; inferred from a rank-3 or rank-4 shape with 1 or 3 channels when not declared."""
    if layout is not None:
        return _checked(layout)
    dims = shape if isinstance(shape, list) else []
    guesses = {
        4: [("NCHW", 1), ("NHWC", 3)],
        3: [("CHW", 0), ("HWC", 2)],
    }.get(len(dims), [])
    fits = [name for name, axis in guesses if dims[axis] in (1, 3)]
    if len(fits) == 1:
        return fits[0]
    raise PreprocessError("the input declares no layout, and its shape does not tell NCHW from NHWC; add layout")


def _checked(layout: Any) -> str:
    if not isinstance(layout, str) or len(set(layout)) != len(layout) or not set(layout) <= set("NCHW"):
        raise PreprocessError(f"layout {layout!r} is not one an image is arranged in (letters N, C, H, W)")
    if "H" not in layout or "W" not in layout:
        raise PreprocessError(f"layout {layout!r} has no H and W axes for an image")
    return layout


def arrange(hwc: np.ndarray, layout: str) -> np.ndarray:
    """Transpose H x W x C to `layout`; N adds a batch axis of 1, and no C requires one channel."""
    if "C" not in layout:
        if hwc.shape[2] != 1:
            raise PreprocessError(f"layout {layout} has no channel axis, but the image has {hwc.shape[2]} channels")
        hwc = hwc[..., 0]
    axes = [a for a in "HWC" if a in layout]
    order = [axes.index(a) for a in layout if a != "N"]
    out = np.transpose(hwc, order)
    return np.expand_dims(out, layout.index("N")) if "N" in layout else out


def numpy_dtype(name: Any) -> np.dtype[Any]:
    if not isinstance(name, str) or name in _UNSUPPORTED_DTYPES:
        raise PreprocessError(f"dtype {name!r} is not one a raw input is rebuilt into")
    try:
        dtype = np.dtype(name)
    except TypeError as e:
        raise PreprocessError(f"dtype {name!r} is not a numeric dtype") from e
    if dtype.kind not in "fiu":
        raise PreprocessError(f"dtype {name!r} is not a numeric dtype")
    return dtype


def cast(values: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Floats are cast; integers are rounded to nearest and clipped to the dtype's range, as quantizers do."""
    if dtype.kind == "f":
        return values.astype(dtype)
    info = np.iinfo(dtype)
    out: np.ndarray = np.clip(np.rint(values), info.min, info.max).astype(dtype)
    return out
