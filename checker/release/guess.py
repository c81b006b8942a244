"""What a graph only hints at: the meaning of a tensor and its layout, and names for unnamed dynamic dims.

Every guess comes with the reason for it, which `checker init` writes beside the field so it gets checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checker.readers.graphinfo import Dim, TensorSpec

FLOATS = ("float32", "float16", "bfloat16", "float64")
INTEGERS = ("int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8")
# Name fragments, tried in order; the first that occurs in the (lower-case) tensor name decides.
INPUT_HINTS = (
    ("pixel", "image"),
    ("image", "image"),
    ("img", "image"),
    ("photo", "image"),
    ("input_ids", "text"),
    ("token", "text"),
    ("attention_mask", "text"),
    ("audio", "audio"),
    ("wave", "audio"),
    ("speech", "audio"),
)
OUTPUT_HINTS = (
    ("prob", "probabilities"),
    ("score", "scores"),
    ("logit", "logits"),
    ("embed", "embedding"),
    ("box", "boxes"),
    ("mask", "mask"),
    ("token", "tokens"),
)
MAX_DIM_NAME = 64


@dataclass(frozen=True)
class Guess:
    meaning: str
    why: str  # empty for a default that nothing in the graph suggests
    layout: str | None = None


def _hint(name: str, hints: tuple[tuple[str, str], ...]) -> str | None:
    lower = name.lower()
    return next((meaning for fragment, meaning in hints if fragment in lower), None)


def image_layout(shape: tuple[Dim, ...] | None) -> str | None:
    """NCHW or NHWC when a rank-4 shape has a static colour axis (1 or 3 channels) in one of those places."""
    if shape is None or len(shape) != 4:
        return None
    if shape[1] in (1, 3):
        return "NCHW"
    if shape[3] in (1, 3):
        return "NHWC"
    return None


def input_guess(spec: TensorSpec) -> Guess:
    hinted = _hint(spec.name, INPUT_HINTS)
    layout = image_layout(spec.shape) if spec.dtype in FLOATS else None
    if hinted:
        return Guess(hinted, "from the input's name", layout if hinted == "image" else None)
    if layout:
        return Guess("image", f"from the shape ({layout}, a colour axis of 1 or 3)", layout)
    if spec.dtype in INTEGERS and spec.shape is not None and len(spec.shape) == 2:
        return Guess("text", "from the shape and type ([batch, sequence] of integers)")
    return Guess("tensor", "")


def output_guess(spec: TensorSpec, labelled: bool) -> Guess:
    hinted = _hint(spec.name, OUTPUT_HINTS)
    if hinted:
        return Guess(hinted, "from the output's name")
    if labelled:
        return Guess("logits", "its axis matches the class names in the graph's metadata")
    shape = spec.shape
    if spec.dtype in FLOATS and shape is not None and len(shape) == 2 and isinstance(shape[1], int) and shape[1] > 1:
        return Guess("logits", "from the shape ([batch, classes], as a classifier's)")
    return Guess("other", "")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "tensor"


def _fresh(wanted: str, used: set[str]) -> str:
    name, n = wanted[:MAX_DIM_NAME], 2
    while name in used:
        suffix = f"_{n}"
        name, n = wanted[: MAX_DIM_NAME - len(suffix)] + suffix, n + 1
    used.add(name)
    return name


def named_shape(spec: TensorSpec, used: set[str]) -> list[int | str] | None:
    """The manifest shape: static sizes as ints, dynamic dims by name (the graph's, else a new unique one).

    A name shared by two tensors claims they have the same size in every case, so a new name is never shared.
    """
    if spec.shape is None:
        return None
    out: list[int | str] = []
    for axis, dim in enumerate(spec.shape):
        if isinstance(dim, int):
            out.append(dim)
        elif isinstance(dim, str) and dim.strip():
            out.append(dim[:MAX_DIM_NAME])
            used.add(dim[:MAX_DIM_NAME])
        else:
            out.append(_fresh(f"{_slug(spec.name)}_dim{axis}", used))
    return out
