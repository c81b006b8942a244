"""inputs.tokenizer_settings: a tokenizer.json whose saved settings the declaration overrides is named once.

The files are real tokenizers files, saved by the tokenizers library after `enable_truncation` and
`enable_padding`, as an application's training code saves them; the tensors are what the application feeds
once it overrides them (`enable_truncation(256)`, `no_padding()`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prepkit import bundle_maker, write_tokenizer
from tokenizers import Tokenizer

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.checks.tokenizer import tokenizer_stage

TEXT = "the quick brown fox"


def _saved(tmp_path: Path, truncation: int | None, padding: int | None) -> Path:
    path = write_tokenizer(tmp_path / "made.json")
    tok = Tokenizer.from_file(str(path))
    if truncation is not None:
        tok.enable_truncation(truncation)
    if padding is not None:
        tok.enable_padding(length=padding, pad_id=0, pad_token="[PAD]")
    tok.save(str(path))
    return path


def _application(path: Path, special_tokens: bool) -> np.ndarray:
    """What the application feeds: the file loaded, then its own settings (truncation 256, no padding)."""
    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(256)
    tok.no_padding()
    return np.asarray([tok.encode(TEXT, add_special_tokens=special_tokens).ids], np.int64)


def _run(tmp_path: Path, saved: Path, declared: dict[str, Any], special_tokens: bool = True) -> list[Any]:
    prep = {"kind": "text", "tokenizer": "tokenizer.json", **declared}
    inputs = [{"name": "input_ids", "dtype": "int64", "shape": [1, "tokens"], "preprocessing": prep}]
    cases = [{"name": "fox", "inputs": {"input_ids": _application(saved, special_tokens)}, "raw": {"input_ids": TEXT}}]
    ctx = bundle_maker(tmp_path)(inputs, cases, {"tokenizer.json": saved.read_bytes()})
    findings = list(tokenizer_stage(ctx))
    assert not list(fidelity_stage(ctx)), "the declaration is the application's: the tensors match"
    return findings


def test_the_saved_truncation_and_padding_the_declaration_overrides_are_named(tmp_path: Path) -> None:
    saved = _saved(tmp_path, truncation=128, padding=128)
    (found,) = _run(tmp_path, saved, {"max_length": 256, "truncation": True, "padding": "none"})
    assert found.id == F.INPUTS_TOKENIZER_SETTINGS and found.severity is F.Severity.WARNING
    assert "the declaration wins" in found.message
    assert "truncation (the file: to 128 tokens; the declaration: to 256 tokens)" in found.message
    assert "padding (the file: to 128 tokens; the declaration: none)" in found.message
    assert [o["setting"] for o in found.details["overridden"]] == ["truncation", "padding"]
    assert found.line is not None


def test_special_tokens_the_declaration_leaves_out_are_named(tmp_path: Path) -> None:
    saved = _saved(tmp_path, truncation=None, padding=None)
    (found,) = _run(tmp_path, saved, {"max_length": 256, "truncation": True, "add_special_tokens": False}, False)
    said = (
        "special tokens (the file: its post-processor adds 2 special tokens; the declaration: "
        "add_special_tokens: false)"
    )
    assert said in found.message
    assert "truncation" not in found.message  # the file saved none: the declared one overrides nothing


@pytest.mark.parametrize(
    ("truncation", "padding", "declared"),
    [
        (None, None, {}),
        (256, None, {"max_length": 256, "truncation": True}),
        (128, 128, {"max_length": 128, "truncation": True, "padding": "max_length"}),
    ],
)
def test_a_declaration_that_agrees_with_its_file_draws_nothing(
    tmp_path: Path, truncation: int | None, padding: int | None, declared: dict[str, Any]
) -> None:
    saved = _saved(tmp_path, truncation, padding)
    prep = {"kind": "text", "tokenizer": "tokenizer.json", **declared}
    inputs = [{"name": "input_ids", "dtype": "int64", "shape": [1, "tokens"], "preprocessing": prep}]
    ctx = bundle_maker(tmp_path)(inputs, [], {"tokenizer.json": saved.read_bytes()})
    assert list(tokenizer_stage(ctx)) == []
