"""Naming the tokenization mistake that turns the declared token ids into the stored ones: the template, the
special tokens, the final line break, a normalizer the tokenizer.json lacks (strip, lowercase, accents), the
padding and truncation."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from checker.preprocess.search import Alternative
from checker.preprocess.text.source import TextSource
from checker.preprocess.text.spec import TextSpec


def text_alternatives(src: TextSource, target: str, stored: np.ndarray) -> Iterator[Alternative]:
    spec = src.spec

    def variant(description: str, alt: TextSpec, text: str | None = None) -> Alternative:
        return Alternative(description, lambda: src.build(alt, text)[target], 0.0)

    if spec.template is not None:
        yield variant("without the template", replace(spec, template=None))
    toggled = replace(spec, special_tokens=not spec.special_tokens)
    yield variant(f"{'without' if spec.special_tokens else 'with'} the tokenizer's special tokens", toggled)
    if src.line_break:
        yield variant("with the raw file's final line break kept", spec, src.text + src.line_break)
    for description, text in _normalized(src.text):
        yield variant(description, spec, text)
    if stored.ndim >= 1:
        for description, alt in _length_variants(spec, int(stored.shape[-1])):
            yield variant(description, alt)


def _normalized(text: str) -> Iterator[tuple[str, str]]:
    """The raw text through each normalizer an application's tokenizer often has and a hand-made tokenizer.json
    lacks, as the tokenizers library itself applies it."""
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
        changed = normalizer.normalize_str(text)
        if changed != text:
            yield f"with the text through {words} first, which the tokenizer.json lacks", changed


def _length_variants(spec: TextSpec, length: int) -> Iterator[tuple[str, TextSpec]]:
    declared = f"(declared: padding {spec.padding}, truncation {str(spec.truncation).lower()}, " + (
        f"max_length {spec.max_length})"
    )
    yield f"without padding or truncation {declared}", replace(spec, padding="none", truncation=False)
    yield (
        f"truncated to {length} tokens {declared}",
        replace(spec, max_length=length, padding="none", truncation=True),
    )
    yield (
        f"padded to {length} tokens {declared}",
        replace(spec, max_length=length, padding="max_length", truncation=False),
    )
    yield (
        f"padded and truncated to {length} tokens {declared}",
        replace(spec, max_length=length, padding="max_length", truncation=True),
    )
