"""The input kinds' table (`preprocess.kinds.KINDS`) held to every other table a kind needs: the kind names
known without loading the kinds, the sort of tensor each makes (references), the example `checker init` writes,
the schema's kind enum and its branch, the input meanings, its section in docs/preprocessing.md, its room in the
import-linter contract and its package. A kind missing from any of them is reported; the tests below remove one
of each to show it is."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import checker.preprocess as preprocess
from checker.checks import references
from checker.manifest.schema import load
from checker.preprocess import kinds
from checker.release.draft import _preprocessing_todo

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = REPO / "pyproject.toml"
ANY_KIND = {"custom", kinds.DERIVED}  # kinds the schema has that no package rebuilds


def preprocessing_schema(schema: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = schema["properties"]["inputs"]["items"]["properties"]["preprocessing"]
    return found


def kind_gaps(schema: dict[str, Any] | None = None, docs: str | None = None) -> list[str]:
    """What the kinds' table and the tables beside it disagree on."""
    schema = load("manifest") if schema is None else schema
    docs = (REPO / "docs" / "preprocessing.md").read_text(encoding="utf-8") if docs is None else docs
    block = preprocessing_schema(schema)
    enum = set(block["properties"]["kind"]["enum"])
    branches = {b["if"]["properties"]["kind"].get("const") for b in block.get("allOf", [])}
    meanings = set(schema["properties"]["inputs"]["items"]["properties"]["meaning"]["enum"])
    independence = re.search(r"Input kinds are rooms.*?modules = \[(.*?)\]", PYPROJECT.read_text(), re.S)
    rooms = set(re.findall(r'"([\w.]+)"', independence.group(1) if independence else ""))
    table = set(kinds.KINDS)
    gaps = [f"{k}: not in KIND_NAMES" for k in sorted(table - set(preprocess.KIND_NAMES))]
    gaps += [f"{k}: in KIND_NAMES but not in KINDS" for k in sorted(set(preprocess.KIND_NAMES) - table)]
    gaps += [f"{k}: in the schema's kinds but not in KINDS" for k in sorted(enum - table - ANY_KIND)]
    for k in sorted(table):
        meaning = references._KIND_MEANING.get(k)
        if meaning is None or meaning not in meanings:
            gaps.append(f"{k}: no input meaning it makes (checks/references.py, the schema's meanings)")
        elif f"kind: {k}" not in "\n".join(_preprocessing_todo(meaning)):
            gaps.append(f"{k}: no example for `checker init` (release/draft.py)")
        if k not in enum or k not in branches:
            gaps.append(f"{k}: no kind and branch in the schema")
        if not re.search(rf"^## .*{k}", docs, re.I | re.M):
            gaps.append(f"{k}: no section in docs/preprocessing.md")
        if f"checker.preprocess.{k}" not in rooms:
            gaps.append(f"{k}: no room in the import-linter contract")
        if not (REPO / "checker" / "preprocess" / k / "kind.py").is_file():
            gaps.append(f"{k}: no package checker/preprocess/{k}/ with its kind.py")
    return gaps


def test_every_kind_has_its_entry_in_every_table() -> None:
    assert kind_gaps() == []


def test_a_kind_left_out_of_the_table_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinds, "KINDS", {k: v for k, v in kinds.KINDS.items() if k != "audio"})
    assert kind_gaps() == ["audio: in KIND_NAMES but not in KINDS", "audio: in the schema's kinds but not in KINDS"]


def test_a_kind_left_out_of_another_table_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    meaning = {k: v for k, v in references._KIND_MEANING.items() if k != "tabular"}
    monkeypatch.setattr(references, "_KIND_MEANING", meaning)
    assert kind_gaps() == ["tabular: no input meaning it makes (checks/references.py, the schema's meanings)"]
    monkeypatch.undo()
    monkeypatch.setattr(preprocess, "KIND_NAMES", ("image", "text", "audio"))
    assert kind_gaps() == ["tabular: not in KIND_NAMES"]
    monkeypatch.undo()
    docs = (REPO / "docs" / "preprocessing.md").read_text(encoding="utf-8").replace("## Audio", "## Sound")
    assert kind_gaps(docs=docs) == ["audio: no section in docs/preprocessing.md"]


def test_a_new_kind_in_the_table_alone_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinds, "KINDS", {**kinds.KINDS, "video": kinds.KINDS["image"]})
    gaps = kind_gaps()
    assert "video: not in KIND_NAMES" in gaps and "video: no kind and branch in the schema" in gaps
    assert "video: no package checker/preprocess/video/ with its kind.py" in gaps
