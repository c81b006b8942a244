"""Material for the preprocessing tests: real photographs (scikit-image ships them), a real tokenizer.json,
small bundles."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import skimage.data
from bundlekit import context_for, put, write_manifest
from PIL import Image

from checker.context import Context
from checker.readers.casefiles import load_cases

PHOTOS = Path(skimage.data.__file__).parent

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "query", ":", "passage", "the", "cat", "sat", "on", "mat",
    "a", "dog", "ran", "{", "}", "and", "then", "slept", ".", "?", "where", "is",
]  # fmt: skip


def photo(name: str) -> Path:
    return PHOTOS / name


def pixels(path: Path, mode: str = "RGB") -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert(mode))


def write_tokenizer(path: Path, pad: bool = True) -> Path:
    """A BERT-style word-level tokenizer: lower case, split at spaces and punctuation, [CLS] ... [SEP]."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(VOCAB if pad else VOCAB[1:])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.save(str(path))
    return path


def ids(*tokens: str) -> list[int]:
    return [VOCAB.index(t) for t in tokens]


BundleMaker = Callable[..., Context]


def bundle_maker(tmp_path: Path) -> BundleMaker:
    """Write a bundle (manifest, stored tensors, raw files) and return its Context with the cases loaded.

    cases: [{"name": str, "inputs": {input: array}, "raw": {input: source path or str text}}]
    """

    def make(inputs: list[dict[str, Any]], cases: list[dict[str, Any]], files: dict[str, Any] | None = None) -> Context:
        root = tmp_path / "bundle"
        root.mkdir(exist_ok=True)
        for rel, content in (files or {}).items():
            put(root / rel, content)
        manifest_cases = [_write_case(root, case) for case in cases]
        release = {"name": "prepared", "version": "1.0.0"}
        manifest = {
            "manifest_version": 1,
            "release": release,
            "inputs": inputs,
            "comparison": {"cases": manifest_cases},
        }
        write_manifest(root, manifest)
        ctx = context_for(root)
        ctx.cases = load_cases(ctx, [i["name"] for i in inputs], ["out"]).cases
        assert len(ctx.cases) == len(cases)
        return ctx

    return make


def _write_case(root: Path, case: dict[str, Any]) -> dict[str, Any]:
    name = case["name"]
    entry: dict[str, Any] = {"name": name, "inputs": {}, "expected": {"out": f"cases/{name}/out.npy"}, "raw": {}}
    put(root / entry["expected"]["out"], np.zeros(1, np.float32))
    for input_name, array in case["inputs"].items():
        entry["inputs"][input_name] = f"cases/{name}/{input_name}.npy"
        put(root / entry["inputs"][input_name], array)
    for input_name, source in case.get("raw", {}).items():
        rel = f"raw/{name}-{input_name}" + (source.suffix if isinstance(source, Path) else ".txt")
        put(root / rel, source)
        entry["raw"][input_name] = rel
    return entry


def without(steps: list[dict[str, Any]], name: str, *keys: str) -> list[dict[str, Any]]:
    """`steps` with `keys` left out of the step `name` (so that they take their defaults)."""
    out = []
    for step in steps:
        ((key, value),) = step.items()
        if key == name and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in keys}
        out.append({key: value})
    return out


def changed(steps: list[dict[str, Any]], name: str, **params: Any) -> list[dict[str, Any]]:
    """`steps` with `params` set in the step `name`."""
    return [{k: ({**v, **params} if k == name else v)} for s in steps for k, v in s.items()]
