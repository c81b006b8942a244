"""A raw text and every input tokenized from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from checker.preprocess.kind import Target
from checker.preprocess.layout import cast, numpy_dtype
from checker.preprocess.text.spec import TextSpec
from checker.preprocess.text.tokenize import build_text, read_text


@dataclass
class TextSource:
    """A raw text and every input tokenized from it (the text input and the inputs derived from it)."""

    spec: TextSpec
    root: Path
    text: str
    targets: list[Target]
    line_break: str = ""  # the final line break the raw file ended in, dropped from `text`

    @property
    def tolerance(self) -> float:
        return 0.0  # token ids are equal or wrong

    def build(self, spec: TextSpec | None = None, text: str | None = None) -> dict[str, np.ndarray]:
        encoding = build_text(spec or self.spec, self.root, self.text if text is None else text)
        return {t.name: token_tensor(encoding[t.field], t) for t in self.targets}


def open_text(spec: TextSpec, targets: list[Target], raw: Path, raw_name: str, root: Path) -> TextSource:
    text, line_break = _split_line_break(raw, raw_name)
    return TextSource(spec, root, text, targets, line_break)


def _split_line_break(raw: Path, raw_name: str) -> tuple[str, str]:
    text = read_text(raw, raw_name)
    full = raw.read_bytes().decode("utf-8-sig", errors="replace")
    return text, full[len(text) :]


def token_tensor(values: np.ndarray, target: Target) -> np.ndarray:
    """A 1-D encoding array as the input holds it: a batch axis where the layout (or a 2-D shape) has one."""
    layout, shape = target.layout, target.shape
    if isinstance(layout, str) and "N" in layout:
        values = np.expand_dims(values, layout.index("N"))
    elif layout is None and not (isinstance(shape, list) and len(shape) == 1):
        values = values[None]
    return cast(values, numpy_dtype(target.dtype))
