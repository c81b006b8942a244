"""Declarations of one input must agree: layout with the rank of shape, meaning with the preprocessing kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from bundlekit import linear_model, manifest, write_bundle

from checker import findings as F
from checker.context import Options
from checker.verify import verify_bundle


def verify_with(tmp_path: Path, **changes: Any) -> tuple[Any, list[str]]:
    root = write_bundle(tmp_path / "b", linear_model(), manifest())
    data = yaml.safe_load((root / "bundle.yaml").read_text())
    data["inputs"][0].update(changes)
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return verify_bundle(root, Options()), (root / "bundle.yaml").read_text().splitlines()


def test_a_layout_of_another_rank_is_refused(tmp_path: Path) -> None:
    report, lines = verify_with(tmp_path, layout="NCHW")
    found = [f for f in report.findings if f.id == F.MANIFEST_SCHEMA]
    assert len(found) == 1 and "names 4 axes" in found[0].message and "has 2" in found[0].message
    assert lines[found[0].line - 1].strip() == "layout: NCHW"
    assert report.status() == "fail"


@pytest.mark.parametrize(
    ("meaning", "kind", "ok"),
    [("audio", "image", False), ("image", "audio", False), ("tabular", "custom", True), ("tensor", "text", False)],
)
def test_meaning_agrees_with_kind(tmp_path: Path, meaning: str, kind: str, ok: bool) -> None:
    prep: dict[str, Any] = {"kind": "custom", "description": "x"}
    if kind == "image":
        prep = {"kind": "image", "color": "RGB", "resize": {"mode": "none"}}
    elif kind == "audio":
        prep = {"kind": "audio", "sample_rate": 16000, "channels": 1, "range": [-1, 1]}
    elif kind == "text":
        prep = {"kind": "text", "tokenizer": "tok.json"}
    report, lines = verify_with(tmp_path, meaning=meaning, preprocessing=prep)
    found = [f for f in report.findings if f.id == F.MANIFEST_SCHEMA and "meaning" in f.message]
    if ok:
        assert not found
    else:
        assert len(found) == 1 and f"'{kind}' makes {kind}" in found[0].message, report.findings
        assert lines[found[0].line - 1].strip() == f"meaning: {meaning}"


def test_a_matching_layout_passes(tmp_path: Path) -> None:
    report, _ = verify_with(tmp_path, layout="NF")
    assert not [f for f in report.findings if f.id == F.MANIFEST_SCHEMA]
