"""Naming the tokenization mistake that turns the declared token ids into the stored ones: the template, the
special tokens, the final line break, a normalizer the tokenizer.json lacks (strip, lowercase, accents), the
padding and truncation."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from checker.preprocess.search import Alternative
from checker.preprocess.text.source import TextSource
from checker.preprocess.text.spec import TextSpec

# One edit of the declared tokenization: what it does to the spec and to the raw text (composable, so that a
# second edit can be made on top of a first).
Change = Callable[[TextSpec, str], tuple[TextSpec, str]]


@dataclass(frozen=True)
class _Edit:
    description: str
    change: Change


def text_alternatives(src: TextSource, target: str, stored: np.ndarray) -> Iterator[Alternative]:
    edits = list(_edits(src, stored))

    def alternative(description: str, changes: tuple[Change, ...], then: bool) -> Alternative:
        def build() -> np.ndarray:
            spec, text = src.spec, src.text
            for change in changes:
                spec, text = change(spec, text)
            return src.build(spec, text)[target]

        def second() -> Iterator[Alternative]:
            # another edit on top: a lowercase that leaves the accented words, then the accents stripped
            for other in edits:
                if other.change is not changes[0]:
                    yield alternative(f"{description}, and {other.description}", (*changes, other.change), False)

        return Alternative(description, build, 0.0, then=second if then else None)

    for edit in edits:
        yield alternative(edit.description, (edit.change,), True)


def _edits(src: TextSource, stored: np.ndarray) -> Iterator[_Edit]:
    spec = src.spec
    if spec.template is not None:
        yield _Edit("without the template", lambda s, t: (replace(s, template=None), t))
    words = f"{'without' if spec.special_tokens else 'with'} the tokenizer's special tokens"
    yield _Edit(words, lambda s, t: (replace(s, special_tokens=not spec.special_tokens), t))
    if src.line_break:
        yield _Edit("with the raw file's final line break kept", lambda s, t: (s, t + src.line_break))
    for description, normalizer in _normalizers(src.text):
        yield _Edit(description, functools.partial(_normalized, normalizer))
    if stored.ndim >= 1:
        for description, fields in _length_variants(spec, int(stored.shape[-1])):
            yield _Edit(description, functools.partial(_lengths, fields))


def _normalized(normalizer: Any, spec: TextSpec, text: str) -> tuple[TextSpec, str]:
    return spec, normalizer.normalize_str(text)


def _lengths(fields: dict[str, Any], spec: TextSpec, text: str) -> tuple[TextSpec, str]:
    return replace(spec, **fields), text


def _normalizers(text: str) -> Iterator[tuple[str, Any]]:
    """Each normalizer an application's tokenizer often has and a hand-made tokenizer.json lacks, as the
    tokenizers library itself applies it, where it changes the raw text."""
    from tokenizers import normalizers  # imported where first needed, as tokenize.py does

    found = (
        ("`normalizers.Strip()`", normalizers.Strip()),
        ("`normalizers.Lowercase()`", normalizers.Lowercase()),
        (
            "`normalizers.NFD()` and `StripAccents()`",
            normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents()]),
        ),
    )
    for words, normalizer in found:
        if normalizer.normalize_str(text) != text:
            yield f"with the text through {words} first, which the tokenizer.json lacks", normalizer


def _length_variants(spec: TextSpec, length: int) -> Iterator[tuple[str, dict[str, Any]]]:
    declared = f"(declared: padding {spec.padding}, truncation {str(spec.truncation).lower()}, " + (
        f"max_length {spec.max_length})"
    )
    yield f"without padding or truncation {declared}", {"padding": "none", "truncation": False}
    yield (
        f"truncated to {length} tokens {declared}",
        {"max_length": length, "padding": "none", "truncation": True},
    )
    yield (
        f"padded to {length} tokens {declared}",
        {"max_length": length, "padding": "max_length", "truncation": False},
    )
    yield (
        f"padded and truncated to {length} tokens {declared}",
        {"max_length": length, "padding": "max_length", "truncation": True},
    )
