"""Raw inputs and preprocessing from a hostile bundle: image formats, overflowing normalisation, tokenizers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import messages, rewrite_manifest

from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.decode import decode
from checker.preprocess.text import tokenize as text_module
from checker.preprocess.text.spec import TextSpec
from checker.preprocess.text.tokenize import build_text
from checker.reports.model import BundleReport

EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n(hello) print showpage\n%%EOF\n"


def test_postscript_is_not_handed_to_ghostscript(tmp_path: Path) -> None:
    # Pillow opens EPS by running Ghostscript on it: PostScript from a pull request, executed.
    path = tmp_path / "photo.png"
    path.write_bytes(EPS)
    with pytest.raises(PreprocessError) as caught:
        decode(path, "photo.png")
    assert "cannot be decoded as an image: not PNG, JPEG" in str(caught.value)
    assert "Ghostscript" not in str(caught.value)


@pytest.mark.parametrize("field", [{"scale": 1e30, "std": [1e-300] * 3}, {"std": [1e-320, 0.224, 0.225]}])
def test_normalisation_that_overflows_fails_fidelity(
    example: Path, verify: Callable[..., BundleReport], field: dict[str, object]
) -> None:
    # Infinite tensors made the default tolerance infinite too, and the release passed with no finding.
    rewrite_manifest(example, lambda d: d["inputs"][0]["preprocessing"].update(field))
    report = verify(example)
    assert report.status() == "fail"
    assert any("overflow" in m for m in messages(report, "inputs.fidelity"))


def _backtracking_tokenizer(path: Path, pattern: str) -> Path:
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    tok.save(str(path))
    return path


def test_a_backtracking_tokenizer_is_abandoned_within_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each run of 20 'a' costs about 25 ms, so 1 MiB of them would take twenty minutes per tokenization.
    monkeypatch.setattr(text_module, "TOKENIZE_BUDGET_S", 0.2)
    _backtracking_tokenizer(tmp_path / "tokenizer.json", r"(a+)+b")
    spec = TextSpec(tokenizer="tokenizer.json")
    with pytest.raises(PreprocessError, match="the tokenizer was abandoned"):
        build_text(spec, tmp_path, ("a" * 20 + "c") * 60)
    with pytest.raises(PreprocessError, match="not used again"):
        build_text(spec, tmp_path, "a")


def test_a_tokenizer_that_panics_is_a_preprocessing_error(tmp_path: Path) -> None:
    # Oniguruma's retry limit panics in Rust; the panic is a BaseException that `except Exception` let through.
    _backtracking_tokenizer(tmp_path / "tokenizer.json", r"(a+)+$")
    with pytest.raises(PreprocessError, match="cannot be tokenized"):
        build_text(TextSpec(tokenizer="tokenizer.json"), tmp_path, "a" * 30 + "b")
