"""A text input's preprocessing as the manifest declares it (its typed block, checker/manifest/model/text.py):
the tokenizer, the template, the length policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from checker.manifest.model import text as m
from checker.preprocess.checked import checked
from checker.preprocess.errors import PreprocessError

FIELDS = get_args(m.Field)  # the arrays of an encoding


@dataclass(frozen=True)
class TextSpec:
    tokenizer: str
    tokenizer_sha256: str | None = None
    template: str | None = None
    max_length: int | None = None
    padding: str = m.Text.padding
    truncation: bool = m.Text.truncation
    field: str = m.Text.field
    special_tokens: bool = (
        m.Text.add_special_tokens
    )  # add_special_tokens: let the tokenizer's post-processor add [CLS], [SEP] ...

    @classmethod
    def from_manifest(cls, prep: m.Text | dict[str, Any]) -> TextSpec:
        """The typed block (plain data, a test's, is judged by the schema first)."""
        b = prep if isinstance(prep, m.Text) else checked(m.Text, {"kind": "text", **prep}, "preprocessing")
        spec = cls(
            tokenizer=b.tokenizer,
            tokenizer_sha256=b.tokenizer_sha256,
            template=b.template,
            max_length=b.max_length,
            padding=b.padding,
            truncation=b.truncation,
            field=b.field,
            special_tokens=b.add_special_tokens,
        )
        if spec.max_length is None and (spec.padding == "max_length" or spec.truncation):
            raise PreprocessError("preprocessing.max_length is required for padding: max_length or truncation")
        return spec
