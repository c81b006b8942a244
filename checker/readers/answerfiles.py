"""Stored application answers (`expected_answers:`): JSON (detections, classes, text, decisions), a .npy without
pickles (embeddings, values, masks) or a PNG of label indices (masks), read under bounds. A file from a pull
request may be huge, nested deeply, hold NaN or the wrong types: each is an AnswerFileError naming the file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from checker.bundle.paths import regular_size
from checker.readers.tensors import TensorFileError, load_npy

MAX_JSON_BYTES = 16 << 20
MAX_DEPTH = 8  # an array of items, each an array of {box: [...]}: four levels are all a format needs
MAX_PNG_PIXELS = 50_000_000


class AnswerFileError(ValueError):
    """A stored answer that cannot be read: answers.invalid."""


def read_answer_file(path: Path, rel: str) -> Any:
    """The file's content: parsed JSON, or an array for .npy and .png."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            return load_npy(path, rel)
        except TensorFileError as exc:
            raise AnswerFileError(str(exc)) from exc
    if suffix == ".png":
        return _png(path, rel)
    if suffix != ".json":
        raise AnswerFileError(f"'{rel}': a stored answer is .json, .npy or .png")
    return _json(path, rel)


def _json(path: Path, rel: str) -> Any:
    try:
        size = regular_size(path)
    except OSError as exc:
        raise AnswerFileError(f"'{rel}' cannot be read ({exc.strerror})") from exc
    if size > MAX_JSON_BYTES:
        raise AnswerFileError(f"'{rel}' is {size} bytes; a stored answer may be {MAX_JSON_BYTES}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AnswerFileError(f"'{rel}' is not UTF-8 text") from exc
    if _depth(text) > MAX_DEPTH:
        raise AnswerFileError(f"'{rel}' nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise AnswerFileError(f"'{rel}' is not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    except ValueError as exc:
        raise AnswerFileError(f"'{rel}': {exc}") from exc


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _depth(text: str) -> int:
    """The deepest nesting of brackets outside strings, counted without parsing (a deep file would exhaust the
    parser's recursion first)."""
    depth = top = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            top = max(top, depth)
            if top > MAX_DEPTH:
                return top
        elif ch in "]}":
            depth -= 1
    return top


def _png(path: Path, rel: str) -> np.ndarray:
    from checker.preprocess.image.resample import pillow

    image = pillow()
    try:
        with image.open(path, formats=("PNG",)) as im:
            w, h = im.size
            if w * h > MAX_PNG_PIXELS:
                raise AnswerFileError(f"'{rel}' is {w}x{h} pixels; at most {MAX_PNG_PIXELS}")
            if im.mode not in ("L", "P", "1", "I;16", "I"):
                raise AnswerFileError(f"'{rel}' has mode {im.mode}; a mask is a PNG of label indices (L or P)")
            return np.asarray(im).astype(np.int64)
    except (OSError, ValueError, SyntaxError, image.UnidentifiedImageError, image.DecompressionBombError) as exc:
        raise AnswerFileError(f"'{rel}' cannot be read as a PNG: {exc}") from exc


def finite(value: float) -> bool:
    return math.isfinite(value)
