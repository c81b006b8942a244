"""Text preprocessing with a real tokenizer.json built by the tokenizers library."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from prepkit import ids, write_tokenizer

from checker.preprocess.errors import PreprocessError
from checker.preprocess.rebuild import Inputs, open_source
from checker.preprocess.text import tokenize as text_module
from checker.preprocess.text.spec import TextSpec
from checker.preprocess.text.tokenize import build_text, read_text


@pytest.fixture
def tokenizer(tmp_path: Path) -> Path:
    return write_tokenizer(tmp_path / "tokenizer.json")


def spec(**fields: object) -> TextSpec:
    return TextSpec.from_manifest({"kind": "text", "tokenizer": "tokenizer.json", **fields})


def test_template_then_tokenizer(tokenizer: Path) -> None:
    enc = build_text(spec(template="query: {text}"), tokenizer.parent, "The cat sat")
    np.testing.assert_array_equal(enc["ids"], ids("[CLS]", "query", ":", "the", "cat", "sat", "[SEP]"))
    np.testing.assert_array_equal(enc["attention_mask"], [1] * 7)
    np.testing.assert_array_equal(enc["type_ids"], [0] * 7)


def test_padding_to_max_length(tokenizer: Path) -> None:
    enc = build_text(spec(max_length=8, padding="max_length"), tokenizer.parent, "a dog ran")
    np.testing.assert_array_equal(enc["ids"], [*ids("[CLS]", "a", "dog", "ran", "[SEP]"), 0, 0, 0])
    np.testing.assert_array_equal(enc["attention_mask"], [1, 1, 1, 1, 1, 0, 0, 0])


def test_truncation_keeps_the_special_tokens(tokenizer: Path) -> None:
    enc = build_text(spec(max_length=5, truncation=True, template="query: {text}"), tokenizer.parent, "the cat sat")
    np.testing.assert_array_equal(enc["ids"], ids("[CLS]", "query", ":", "the", "[SEP]"))


def test_without_special_tokens(tokenizer: Path) -> None:
    enc = build_text(spec(add_special_tokens=False), tokenizer.parent, "the cat")
    np.testing.assert_array_equal(enc["ids"], ids("the", "cat"))


def test_no_truncation_means_the_whole_text(tokenizer: Path) -> None:
    enc = build_text(spec(max_length=3), tokenizer.parent, "the cat sat on the mat")
    assert len(enc["ids"]) == 8


def test_braces_in_text_are_not_expanded(tokenizer: Path) -> None:
    enc = build_text(spec(template="query: {text}"), tokenizer.parent, "{text} {0.__class__}")
    # The text arrives verbatim: "{", "text" (unknown), "}", "{", "0" ... are tokens, not template fields.
    assert enc["ids"][3] == ids("{")[0] and enc["ids"][4] == ids("[UNK]")[0]


def test_a_different_tokenizer_file_is_read_again(tmp_path: Path) -> None:
    write_tokenizer(tmp_path / "tokenizer.json")
    first = build_text(spec(), tmp_path, "dog")
    write_tokenizer(tmp_path / "tokenizer.json", pad=False)  # every id shifts down by one
    second = build_text(spec(), tmp_path, "dog")
    assert list(second["ids"]) == [i - 1 for i in first["ids"]]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"template": "no placeholder"}, "template: 'no placeholder' does not match"),
        ({"padding": "max_length"}, "max_length is required"),
        ({"truncation": "yes"}, "truncation: 'yes' is not of type 'boolean'"),
        ({"max_length": 0}, "max_length"),
        ({"padding": "left"}, "padding"),
        ({"field": "offsets"}, "field"),
        ({"tokenizer_sha256": "abc"}, "tokenizer_sha256: 'abc' does not match"),
    ],
)
def test_invalid_fields(fields: dict, message: str) -> None:
    with pytest.raises(PreprocessError, match=message):
        spec(**fields)


def test_padding_without_a_pad_token(tmp_path: Path) -> None:
    write_tokenizer(tmp_path / "tokenizer.json", pad=False)
    with pytest.raises(PreprocessError, match="pad token"):
        build_text(spec(max_length=8, padding="max_length"), tmp_path, "a dog")


def test_tokenizer_digest(tokenizer: Path) -> None:
    good = hashlib.sha256(tokenizer.read_bytes()).hexdigest()
    assert len(build_text(spec(tokenizer_sha256=good), tokenizer.parent, "dog")["ids"]) == 3
    with pytest.raises(PreprocessError, match="tokenizer_sha256"):
        build_text(spec(tokenizer_sha256="0" * 64), tokenizer.parent, "dog")


def test_tokenizer_outside_the_bundle_or_broken(tmp_path: Path) -> None:
    with pytest.raises(PreprocessError, match="bundle"):
        build_text(TextSpec("../tokenizer.json"), tmp_path, "dog")
    (tmp_path / "tokenizer.json").write_text('{"model": 3}')
    with pytest.raises(PreprocessError, match="tokenizers library"):
        build_text(spec(), tmp_path, "dog")


def test_read_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "q.txt"
    path.write_bytes("\ufeffwhere is the cat?\n\n".encode())
    assert read_text(path, "q.txt") == "where is the cat?\n"  # the BOM and one final line break dropped
    path.write_bytes(b"line\r\n")
    assert read_text(path, "q.txt") == "line"
    path.write_bytes(b"\xff\xfe bad")
    with pytest.raises(PreprocessError, match="UTF-8"):
        read_text(path, "q.txt")
    monkeypatch.setattr(text_module, "MAX_TEXT_BYTES", 3)
    with pytest.raises(PreprocessError, match="larger"):
        read_text(path, "q.txt")


def test_one_text_makes_every_derived_input(tokenizer: Path) -> None:
    prep = {"kind": "text", "tokenizer": "tokenizer.json", "max_length": 6, "padding": "max_length"}
    mask = {"kind": "derived", "from": "input_ids", "field": "attention_mask"}
    types = {"kind": "derived", "from": "input_ids", "field": "type_ids"}
    entries = [
        {"name": "input_ids", "dtype": "int64", "shape": ["batch", 6], "preprocessing": prep},
        {"name": "mask", "dtype": "int32", "preprocessing": mask},
        {"name": "types", "dtype": "int64", "layout": "NS", "preprocessing": types},
        {"name": "pixels", "dtype": "float32", "preprocessing": {"kind": "custom", "description": "other"}},
    ]
    raw = tokenizer.parent / "q.txt"
    raw.write_text("the dog\n")
    source = open_source(Inputs.from_data(entries, tokenizer.parent), "input_ids", raw, "q.txt")
    assert source is not None
    tensors = source.build()
    assert sorted(tensors) == ["input_ids", "mask", "types"]
    np.testing.assert_array_equal(tensors["input_ids"], [[*ids("[CLS]", "the", "dog", "[SEP]"), 0, 0]])
    np.testing.assert_array_equal(tensors["mask"], [[1, 1, 1, 1, 0, 0]])
    assert tensors["mask"].dtype == np.int32
    np.testing.assert_array_equal(tensors["types"], np.zeros((1, 6)))
    alone = open_source(Inputs.from_data(entries, tokenizer.parent), "mask", raw, "q.txt")
    assert alone is not None and sorted(alone.build()) == ["mask"]
    assert open_source(Inputs.from_data(entries, tokenizer.parent), "pixels", raw, "q.txt") is None


def test_derived_from_a_non_text_input_is_refused(tokenizer: Path) -> None:
    entries = [{"name": "mask", "preprocessing": {"kind": "derived", "from": "nothing", "field": "attention_mask"}}]
    raw = tokenizer.parent / "q.txt"
    raw.write_text("dog")
    with pytest.raises(PreprocessError, match="not a text input"):
        open_source(Inputs.from_data(entries, tokenizer.parent), "mask", raw, "q.txt")
