"""Text preprocessing: the template, then the bundle's tokenizer.json with the declared length policy."""

from __future__ import annotations

import functools
import hashlib
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from checker.bundle.paths import BundlePathError, regular_size, resolve_inside
from checker.preprocess.errors import MissingExtra, PreprocessError
from checker.preprocess.text.spec import FIELDS, TextSpec

MAX_TOKENIZER_BYTES = 100 << 20
MAX_TEXT_BYTES = 1 << 20
# All the tokenizing one tokenizer may do: a megabyte of text takes well under a second, and a bundle's texts
# are tokenized a few times each (the fidelity explanations try variations).
TOKENIZE_BUDGET_S = 60.0
# Seconds spent per tokenizer file, kept apart from the cache of loaded tokenizers, which may evict and reload.
_SPENT: dict[tuple[str, int, int], float] = {}
# Tried in this order when padding is asked for and tokenizer.json sets no pad token of its own.
PAD_TOKENS = ("[PAD]", "<pad>", "<|pad|>")


def apply_template(template: str | None, text: str) -> str:
    # str.replace, not str.format: the text and the template may hold braces, and format can reach attributes.
    return text if template is None else template.replace("{text}", text)


def build_text(spec: TextSpec, root: Path, text: str) -> dict[str, np.ndarray]:
    """Every encoding array (ids, attention_mask, type_ids) of `text`: 1-D int64, no batch axis."""
    loaded = load_tokenizer(spec, root)
    if _SPENT.get(loaded.key, 0.0) >= TOKENIZE_BUDGET_S:
        raise PreprocessError(f"{spec.tokenizer} used up its {TOKENIZE_BUDGET_S:g} s of tokenizing; not used again")
    tok = configured(loaded, spec)
    enc = _encode(loaded, tok, apply_template(spec.template, text), spec.special_tokens)
    return {name: np.asarray(getattr(enc, name), dtype=np.int64) for name in FIELDS}


def _encode(loaded: Loaded, tok: Any, text: str, special_tokens: bool) -> Any:
    """tok.encode within the tokenizer's time budget: tokenizer.json's regular expressions are the bundle's
    own, and one that backtracks can run for hours. encode_batch releases the GIL, so the worker thread can be
    left behind (it ends with the process) while the verification goes on without this tokenizer."""
    result: list[Any] = []

    def work() -> None:
        try:
            result.append(tok.encode_batch([text], add_special_tokens=special_tokens)[0])
        except BaseException as e:  # tokenizers raises bare Exception subclasses, and a Rust panic is neither
            result.append(e)

    worker = threading.Thread(target=work, name="tokenize", daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(TOKENIZE_BUDGET_S - _SPENT.get(loaded.key, 0.0))
    _SPENT[loaded.key] = _SPENT.get(loaded.key, 0.0) + time.monotonic() - started
    if worker.is_alive():
        _SPENT[loaded.key] = math.inf  # the worker may still hold the tokenizer: never touch it again
        raise PreprocessError(
            f"tokenizing took more than {TOKENIZE_BUDGET_S:g} s in all (a regular expression in tokenizer.json "
            "that backtracks?); the tokenizer was abandoned"
        )
    if isinstance(result[0], BaseException):
        raise PreprocessError(f"the text cannot be tokenized: {result[0]}") from result[0]
    return result[0]


def read_text(path: Path, name: str) -> str:
    """A raw text file: UTF-8 (a BOM is dropped), without the one final line break files end in."""
    try:
        if regular_size(path) > MAX_TEXT_BYTES:
            raise PreprocessError(f"{name} is larger than the {MAX_TEXT_BYTES} bytes a raw text may be")
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as e:
        raise PreprocessError(f"{name} cannot be read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise PreprocessError(f"{name} is not UTF-8 text: {e}") from e
    return text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")


def load_tokenizer(spec: TextSpec, root: Path) -> Loaded:
    try:
        path = resolve_inside(root, spec.tokenizer)
        regular_size(path)
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
    key: tuple[str, int, int] = ("", 0, 0)  # path, mtime and size: its entry in _SPENT


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int, name: str, sha256: str | None) -> Loaded:
    # mtime and size are in the key so that a changed file is read again.
    try:
        from tokenizers import Tokenizer  # an optional extra ([text]), loaded by the first tokenizer read
    except ImportError as e:
        raise MissingExtra("text", "tokenizers") from e
    data = Path(path).read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise PreprocessError(f"{name} does not match preprocessing.tokenizer_sha256")
    try:
        tok = Tokenizer.from_str(data.decode("utf-8"))
    except BaseException as e:  # tokenizers raises bare Exception subclasses, and a Rust panic is neither
        if not (isinstance(e, Exception) or type(e).__name__ == "PanicException"):
            raise
        raise PreprocessError(f"{name} is not a tokenizer.json the tokenizers library reads: {e}") from e
    return Loaded(tok, tok.padding, tok.truncation, (path, mtime_ns, size))


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
