"""A text input's preprocessing as the manifest declares it: the tokenizer, the template, the length policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checker.preprocess import fields as f
from checker.preprocess.errors import PreprocessError

FIELDS = ("ids", "attention_mask", "type_ids")
PADDINGS = ("max_length", "longest", "none")
MAX_LENGTH = 1 << 20


@dataclass(frozen=True)
class TextSpec:
    tokenizer: str
    tokenizer_sha256: str | None = None
    template: str | None = None
    max_length: int | None = None
    padding: str = "none"
    truncation: bool = False
    field: str = "ids"
    special_tokens: bool = True  # add_special_tokens: let the tokenizer's post-processor add [CLS], [SEP] ...

    @classmethod
    def from_manifest(cls, prep: dict[str, Any]) -> TextSpec:
        tokenizer = prep.get("tokenizer")
        if not isinstance(tokenizer, str):
            raise PreprocessError("preprocessing.tokenizer must name the bundle's tokenizer.json")
        spec = cls(
            tokenizer=tokenizer,
            tokenizer_sha256=_sha(prep.get("tokenizer_sha256")),
            template=_template(prep.get("template")),
            max_length=None if prep.get("max_length") is None else _length(prep["max_length"]),
            padding=f.choice(prep, "padding", PADDINGS, "none", "preprocessing"),
            truncation=_flag(prep.get("truncation", False), "preprocessing.truncation"),
            field=f.choice(prep, "field", FIELDS, "ids", "preprocessing"),
            special_tokens=_flag(prep.get("add_special_tokens", True), "preprocessing.add_special_tokens"),
        )
        if spec.max_length is None and (spec.padding == "max_length" or spec.truncation):
            raise PreprocessError("preprocessing.max_length is required for padding: max_length or truncation")
        return spec


def _sha(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) != 64 or any(c not in "0123456789abcdef" for c in value.lower()):
        raise PreprocessError(f"preprocessing.tokenizer_sha256 is {value!r}; expected 64 hex digits")
    return value.lower()


def _template(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or "{text}" not in value:
        raise PreprocessError("preprocessing.template must be a string holding {text}")
    return value


def _length(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LENGTH:
        raise PreprocessError(f"preprocessing.max_length is {value!r}; expected an integer from 1 to {MAX_LENGTH}")
    return value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise PreprocessError(f"{where} is {value!r}; expected true or false")
    return value
