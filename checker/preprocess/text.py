"""Text preprocessing: the template, then the bundle's tokenizer.json with the declared length policy."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from checker.preprocess import fields as f
from checker.preprocess.errors import MissingExtra, PreprocessError

FIELDS = ("ids", "attention_mask", "type_ids")
PADDINGS = ("max_length", "longest", "none")
MAX_TOKENIZER_BYTES = 100 << 20
MAX_TEXT_BYTES = 1 << 20
MAX_LENGTH = 1 << 20
# Tried in this order when padding is asked for and tokenizer.json sets no pad token of its own.
PAD_TOKENS = ("[PAD]", "<pad>", "<|pad|>")


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


def apply_template(template: str | None, text: str) -> str:
    # str.replace, not str.format: the text and the template may hold braces, and format can reach attributes.
    return text if template is None else template.replace("{text}", text)


def build_text(spec: TextSpec, root: Path, text: str) -> dict[str, np.ndarray]:
    """Every encoding array (ids, attention_mask, type_ids) of `text`: 1-D int64, no batch axis."""
    tok = configured(load_tokenizer(spec, root), spec)
    try:
        enc = tok.encode(apply_template(spec.template, text), add_special_tokens=spec.special_tokens)
    except Exception as e:  # tokenizers raises bare Exception subclasses from Rust
        raise PreprocessError(f"the text cannot be tokenized: {e}") from e
    return {name: np.asarray(getattr(enc, name), dtype=np.int64) for name in FIELDS}


def read_text(path: Path, name: str) -> str:
    """A raw text file: UTF-8 (a BOM is dropped), without the one final line break files end in."""
    try:
        if path.stat().st_size > MAX_TEXT_BYTES:
            raise PreprocessError(f"{name} is larger than the {MAX_TEXT_BYTES} bytes a raw text may be")
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as e:
        raise PreprocessError(f"{name} cannot be read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise PreprocessError(f"{name} is not UTF-8 text: {e}") from e
    return text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")


def load_tokenizer(spec: TextSpec, root: Path) -> Loaded:
    from checker.paths import BundlePathError, resolve_inside

    try:
        path = resolve_inside(root, spec.tokenizer)
        stat = path.stat()
    except BundlePathError as e:
        raise PreprocessError(str(e)) from e
    except OSError as e:
        raise PreprocessError(f"{spec.tokenizer} cannot be read: {e.strerror}") from e
    if stat.st_size > MAX_TOKENIZER_BYTES:
        raise PreprocessError(f"{spec.tokenizer} is larger than the {MAX_TOKENIZER_BYTES} bytes a tokenizer may be")
    return _load(str(path), stat.st_mtime_ns, stat.st_size, spec.tokenizer, spec.tokenizer_sha256)


@dataclass(frozen=True)
class Loaded:
    """A tokenizer and the padding and truncation its file set (kept apart: `configured` changes them)."""

    tokenizer: Any
    padding: dict[str, Any] | None
    truncation: dict[str, Any] | None


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int, name: str, sha256: str | None) -> Loaded:
    # mtime and size are in the key so that a changed file is read again.
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        raise MissingExtra("text", "tokenizers") from e
    data = Path(path).read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise PreprocessError(f"{name} does not match preprocessing.tokenizer_sha256")
    try:
        tok = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as e:  # tokenizers raises bare Exception subclasses from Rust
        raise PreprocessError(f"{name} is not a tokenizer.json the tokenizers library reads: {e}") from e
    return Loaded(tok, tok.padding, tok.truncation)


def configured(loaded: Loaded, spec: TextSpec) -> Any:
    """The declared padding and truncation replace whatever tokenizer.json sets."""
    tok, padding, truncation = loaded.tokenizer, loaded.padding, loaded.truncation
    tok.no_padding()
    tok.no_truncation()
    if spec.truncation and spec.max_length is not None:
        direction = (truncation or {}).get("direction", "right")
        tok.enable_truncation(spec.max_length, direction=direction)
    if spec.padding == "max_length" and spec.max_length is not None:
        pad_id, pad_token = _pad_token(tok, padding)
        direction = (padding or {}).get("direction", "right")
        pad_type_id = (padding or {}).get("pad_type_id", 0)
        tok.enable_padding(
            length=spec.max_length,
            pad_id=pad_id,
            pad_token=pad_token,
            pad_type_id=pad_type_id,
            direction=direction,
        )
    return tok


def _pad_token(tok: Any, padding: dict[str, Any] | None) -> tuple[int, str]:
    if padding and padding.get("pad_token") is not None:
        return int(padding["pad_id"]), str(padding["pad_token"])
    for token in PAD_TOKENS:
        token_id = tok.token_to_id(token)
        if token_id is not None:
            return int(token_id), token
    raise PreprocessError(
        f"padding: max_length needs a pad token, and the tokenizer has none of {', '.join(PAD_TOKENS)}"
    )
