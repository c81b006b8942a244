"""Every file a manifest names, with where it names it and the digest it declares."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.bundle.paths import BundlePathError, glob_inside
from checker.manifest import written

MAX_TEST_DATA_FOLDERS = 10_000
PB_NAME = re.compile(r"^(input|output)_(\d+)\.pb$")


@dataclass(frozen=True)
class Named:
    rel: str
    keys: tuple[str | int, ...]  # where the manifest names it
    sha256: str | None = None
    glob: bool = False  # matched by a glob rather than written out
    # The key beside the name that holds its digest (`sha256`, `tokenizer_sha256`), where the manifest has one:
    # `checker lock` writes it there.
    digest_key: str | None = None

    def holder(self, tree: Any) -> Any:
        """The mapping of `tree` (the manifest as written) that names this file."""
        for key in self.keys[:-1]:
            tree = tree[key]
        return tree


def _graph(graph: dict[str, Any], keys: tuple[str | int, ...]) -> Iterator[Named]:
    if isinstance(graph.get("path"), str):
        yield Named(graph["path"], (*keys, "path"), graph.get("sha256"), digest_key="sha256")
    for i, ext in enumerate(graph.get("external_data") or []):
        yield Named(ext["path"], (*keys, "external_data", i, "path"), ext.get("sha256"), digest_key="sha256")


def _inputs_outputs(data: dict[str, Any]) -> Iterator[Named]:
    for i, entry in enumerate(data.get("inputs") or []):
        prep = entry.get("preprocessing") or {}
        if isinstance(prep.get("tokenizer"), str):
            keys = ("inputs", i, "preprocessing", "tokenizer")
            yield Named(prep["tokenizer"], keys, prep.get("tokenizer_sha256"), digest_key="tokenizer_sha256")
        if isinstance(prep.get("config"), str):
            yield Named(prep["config"], ("inputs", i, "preprocessing", "config"))
        imported = prep.get("import")
        if isinstance(imported, dict) and isinstance(imported.get("path"), str):
            yield Named(imported["path"], ("inputs", i, "preprocessing", "import", "path"))
    for i, entry in enumerate(data.get("outputs") or []):
        labels = entry.get("labels") or {}
        if isinstance(labels.get("path"), str):
            yield Named(labels["path"], ("outputs", i, "labels", "path"), labels.get("sha256"), digest_key="sha256")


def _case(case: dict[str, Any], i: int, root: Path) -> Iterator[Named]:
    keys: tuple[str | int, ...] = ("comparison", "cases", i)
    for part in ("inputs", "expected", "raw", "expected_answers"):
        value = case.get(part)
        if isinstance(value, str):
            yield Named(value, (*keys, part))
        elif isinstance(value, dict):
            for name, rel in value.items():
                yield Named(rel, (*keys, part, name))
    if isinstance(case.get("onnx_test_data"), str):
        for rel in test_data_files(root, case["onnx_test_data"]):
            yield Named(rel, (*keys, "onnx_test_data"), glob=True)


def test_data_folders(root: Path, pattern: str) -> list[str]:
    """Folders matched by an `onnx_test_data` glob (bounded)."""
    return [rel for rel in glob_inside(root, pattern) if (root / rel).is_dir()][:MAX_TEST_DATA_FOLDERS]


def test_data_files(root: Path, pattern: str) -> list[str]:
    try:
        folders = test_data_folders(root, pattern)
    except BundlePathError:
        return []
    out = []
    for folder in folders:
        for child in sorted((root / folder).iterdir()):
            if PB_NAME.match(child.name) and not child.is_symlink():
                out.append(f"{folder}/{child.name}")
    return out


def _answers(data: dict[str, Any]) -> Iterator[Named]:
    for i, entry in enumerate(data.get("answers") or []):
        labels = entry.get("labels") if isinstance(entry, dict) else None
        if isinstance(labels, dict) and isinstance(labels.get("path"), str):
            yield Named(labels["path"], ("answers", i, "labels", "path"), labels.get("sha256"), digest_key="sha256")


def _release_files(data: dict[str, Any]) -> Iterator[Named]:
    for i, rel in enumerate(written.items(written.block(data, "release"), "files")):
        if isinstance(rel, str):
            yield Named(rel, ("release", "files", i))


def named_files(data: dict[str, Any], root: Path) -> list[Named]:
    """Every file the manifest names or its globs match, in manifest order."""
    out = list(_release_files(data))
    out.extend(_graph(data.get("graph") or {}, ("graph",)))
    out.extend(_inputs_outputs(data))
    out.extend(_answers(data))
    for i, case in enumerate(written.cases(data)):
        out.extend(_case(case, i, root))
    for i, variant in enumerate(data.get("variants") or []):
        out.extend(_graph(variant.get("graph") or {}, ("variants", i, "graph")))
    return out
