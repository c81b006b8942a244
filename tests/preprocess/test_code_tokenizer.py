"""A tokenizer that is code: docs/preprocessing.md's snippet, run as it stands, gives the ids of the encoder it
claims to match (written here as the oracle), and a character tagger declared with it passes `checker verify`."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from bundlekit import REPO, manifest, put, write_manifest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from checker import findings as F
from checker.context import Options
from checker.release.lock import lock
from checker.verify import verify_bundle

tokenizers = pytest.importorskip("tokenizers")

N = 256
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 .,-'"
VOCAB = {c: i + 3 for i, c in enumerate(ALPHABET)}


def encode(text: str, n: int = N) -> list[int]:
    """The package's own encoder, as the docs write it: one id per character of the stripped text, 1 for an
    unlisted letter, 2 for any other unlisted character, zeros to n."""
    ids = [VOCAB.get(c, 1 if c.isalpha() else 2) for c in text.strip()][:n]
    return ids + [0] * (n - len(ids))


def docs_snippet() -> str:
    """The Python block of the docs' "A tokenizer that is code" that builds the file (its second block)."""
    text = (REPO / "docs" / "preprocessing.md").read_text(encoding="utf-8")
    section = text.split("### A tokenizer that is code", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2 and "tokenizer.save" in blocks[1]
    assert "def encode" in blocks[0] and "VOCAB.get(c, 1 if c.isalpha() else 2) for c in text.strip()" in blocks[0]
    return blocks[1]


STRIP_LINE = re.compile(r"normalizers\.Replace\(Regex\(f\"\\\\A\[\{space\}\].*?\n")


def build(folder: Path, snippet: str) -> Path:
    """Run a snippet that saves "tokenizer.json", saving it in `folder` instead."""
    folder.mkdir(parents=True, exist_ok=True)
    namespace: dict[str, Any] = {}
    code = snippet.replace('"tokenizer.json"', repr(str(folder / "tokenizer.json")))
    exec(compile(code, "docs/preprocessing.md", "exec"), namespace)
    assert namespace["ALPHABET"] == ALPHABET  # the table the oracle uses
    return folder / "tokenizer.json"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("tokenizer"), docs_snippet())


def ids(path: Path, text: str) -> list[int]:
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(N)
    tokenizer.enable_padding(length=N, pad_id=0, pad_token="[PAD]")
    return list(tokenizer.encode(text, add_special_tokens=False).ids)


AWKWARD = [
    "  hello World!  ",
    "a\n\nb\n",
    "\x1c \u3000\x1dok \x1c",  # separators str.strip() removes and Unicode's White_Space lacks
    "Ünïcödé\u00a0",
    "\ue000x\ue001",  # the sentinels themselves in the text
    "日本語 ok",
    "a\u0301b",
    "😀 e",
    "",
    "x" * (N + 40),
    "\U00031350",  # a letter since Unicode 15, which Python 3.11's str.isalpha does not know
]


@pytest.mark.parametrize("text", AWKWARD)
def test_the_snippet_matches_the_encoder_on_awkward_text(built: Path, text: str) -> None:
    assert ids(built, text) == encode(text)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_the_snippet_matches_the_encoder_on_any_text(built: Path, text: str) -> None:
    assert ids(built, text) == encode(text)


def test_the_library_strip_alone_would_differ() -> None:
    # Why the snippet writes str.strip()'s own set: Strip() keeps U+001C, which str.strip() removes.
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({"a": 0, "?": 1}, unk_token="?"))
    tokenizer.normalizer = tokenizers.normalizers.Strip()
    assert tokenizer.encode("\x1ca").ids == [1]
    assert "\x1ca".strip() == "a"


TEXTS = {"plain": "the quick brown fox", "padded": "   Ship's log, day 12.\n", "accents": "Café Ünïcödé 😀"}


def _tagger() -> onnx.ModelProto:
    """A character tagger: an embedding per id, then three tag scores per character."""
    rng = np.random.default_rng(7)
    table = rng.standard_normal((3 + len(ALPHABET), 8)).astype(np.float32)
    w = rng.standard_normal((8, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["E", "input_ids"], ["h"]), helper.make_node("MatMul", ["h", "W"], ["tags"])],
        "tagger",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", N])],
        [helper.make_tensor_value_info("tags", TensorProto.FLOAT, ["batch", N, 3])],
        [numpy_helper.from_array(table, "E"), numpy_helper.from_array(w, "W")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _forward(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return (init["E"][x].astype(np.float64) @ init["W"]).astype(np.float32)


def tagger_bundle(root: Path, tokenizer: Path, texts: dict[str, str] = TEXTS) -> Path:
    model = _tagger()
    put(root / "model.onnx", model)
    put(root / "tokenizer.json", tokenizer)
    put(root / "tags.txt", "outside\nbegin\ninside\n")
    cases = []
    for name, text in texts.items():
        x = np.array([encode(text)], dtype=np.int64)  # the tensor the application's encoder makes
        put(root / f"cases/{name}.txt", text)
        put(root / f"cases/{name}_ids.npy", x)
        put(root / f"cases/{name}_tags.npy", _forward(model, x))
        cases.append(
            {
                "name": name,
                "inputs": {"input_ids": f"cases/{name}_ids.npy"},
                "expected": {"tags": f"cases/{name}_tags.npy"},
                "raw": {"input_ids": f"cases/{name}.txt"},
            }
        )
    data = manifest(
        release={"name": "char-tagger", "version": "1.0.0"},
        inputs=[
            {
                "name": "input_ids",
                "dtype": "int64",
                "shape": ["batch", N],
                "meaning": "text",
                "preprocessing": {
                    "kind": "text",
                    "tokenizer": "tokenizer.json",
                    "max_length": N,
                    "padding": "max_length",
                    "truncation": True,
                    "add_special_tokens": False,
                },
            }
        ],
        outputs=[
            {
                "name": "tags",
                "dtype": "float32",
                "shape": ["batch", N, 3],
                "meaning": "scores",
                "labels": {"path": "tags.txt", "axis": -1},
            }
        ],
    )
    data["comparison"]["cases"] = cases
    data["comparison"]["rules"] = [{"output": "tags", "check": "allclose", "atol": 1e-5, "rtol": 1e-4}]
    write_manifest(root, data)
    lock(root / "bundle.yaml")
    return root


def test_a_tagger_declared_with_the_snippet_passes_verify(built: Path, tmp_path: Path) -> None:
    report = verify_bundle(tagger_bundle(tmp_path / "tagger", built), Options(gain_budget_s=0.0)).to_dict()
    errors = [f["message"] for f in report["findings"] if f["severity"] == "error"]
    assert report["status"] == "pass", errors
    assert not [f for f in report["findings"] if f["id"] in (F.INPUTS_FIDELITY, F.INPUTS_NOT_REBUILT)]


def test_the_same_tagger_with_the_library_strip_fails_fidelity(tmp_path: Path) -> None:
    # The mistake the docs warn of, where the text holds it: a raw file ending in U+001C.
    snippet = docs_snippet()
    assert len(STRIP_LINE.findall(snippet)) == 1
    with_strip = build(tmp_path / "strip", STRIP_LINE.sub("normalizers.Strip(),\n", snippet))
    root = tagger_bundle(tmp_path / "tagger", with_strip, {**TEXTS, "plain": TEXTS["plain"] + "\x1c"})
    report = verify_bundle(root, Options(gain_budget_s=0.0)).to_dict()
    fidelity = [f for f in report["findings"] if f["id"] == F.INPUTS_FIDELITY]
    assert len(fidelity) == 1 and "'plain'" in fidelity[0]["message"], [f["message"] for f in fidelity]


@pytest.mark.parametrize(
    ("application", "text", "named"),
    [
        (lambda t: encode(t), "  the quick fox  ", "with the text through `normalizers.Strip()` first"),
        (lambda t: encode(t.lower()), "The Quick Fox", "with the text through `normalizers.Lowercase()` first"),
        (
            lambda t: encode("".join(c for c in unicodedata.normalize("NFD", t) if not unicodedata.combining(c))),
            "cafe creme brulee, a la carte: café crème brûlée, à la carte",
            "with the text through `normalizers.NFD()` and `StripAccents()` first",
        ),
    ],
    ids=["strip", "lowercase", "accents"],
)
def test_a_normalizer_the_tokenizer_lacks_is_named(tmp_path: Path, application: Any, text: str, named: str) -> None:
    # The docs' tokenizer without its strip, against an application that strips, lowercases or drops accents.
    snippet = STRIP_LINE.sub("", docs_snippet())
    tokenizer = build(tmp_path / "plain", snippet)
    root = tagger_bundle(tmp_path / "tagger", tokenizer, {"only": text})
    x = np.array([application(text)], dtype=np.int64)
    put(root / "cases/only_ids.npy", x)
    put(root / "cases/only_tags.npy", _forward(_tagger(), x))
    lock(root / "bundle.yaml")
    report = verify_bundle(root, Options(gain_budget_s=0.0)).to_dict()
    (fidelity,) = [f for f in report["findings"] if f["id"] == F.INPUTS_FIDELITY]
    assert fidelity["details"]["explanation"].startswith(named), fidelity["message"]
