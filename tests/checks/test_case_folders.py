"""Case folders: each file under negative/ breaks the example bundle one way and names the findings it must
cause; each under positive/ changes it in a way that must still pass, warnings included."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from checker.context import Options
from checker.release.lock import lock
from checker.verify import verify_bundle

CASES = sorted((Path(__file__).parent / "negative").glob("*.yaml"))
POSITIVE = sorted((Path(__file__).parent / "positive").glob("*.yaml"))


def _strip_digests(text: str) -> str:
    text = re.sub(r", sha256: [0-9a-f]{64}", "", text)
    return re.sub(r"(?m)^\s*(sha256|digest): (sha256:)?[0-9a-f]{64}\n", "", text)


def _edit_manifest(text: str, spec: dict[str, Any]) -> str:
    for old, new in spec.get("replace", []):
        assert old in text, f"the case's text is not in the manifest: {old!r}"
        text = text.replace(old, new, 1)
    for old, new in spec.get("replace_all", []):
        assert old in text
        text = text.replace(old, new)
    if spec.get("append_variant_copy"):
        start = text.index("variants:\n") + len("variants:\n")
        text += text[start:]
    if "cut_between" in spec:
        start, end = spec["cut_between"]
        i = text.index(start)
        text = text[:i] + text[text.index(end, i) :]
    return _strip_digests(text) if spec.get("strip_digests") else text


def _edit_files(root: Path, spec: dict[str, Any]) -> None:
    if spec.get("strip_digests"):
        (root / "bundle.sha256").unlink(missing_ok=True)  # the digest list beside the manifest goes with them
    for rel in spec.get("remove", []):
        (root / rel).unlink()
    for rel, target in (spec.get("symlink") or {}).items():
        os.symlink(target, root / rel)
    for rel, text in (spec.get("write") or {}).items():
        (root / rel).write_text(text)
    for rel, arr in (spec.get("npy") or {}).items():
        np.save(root / rel, np.zeros(arr["shape"], dtype=arr["dtype"]))
    for rel, op in (spec.get("npy_edit") or {}).items():
        array = np.load(root / rel)
        if op == "reverse_channels":
            array = array[:, ::-1]
        elif op == "nan":
            array = np.full_like(array, np.nan)
        elif op == "big_endian":
            array = array.astype(array.dtype.newbyteorder(">"))
        np.save(root / rel, np.ascontiguousarray(array))
    for rel, members in (spec.get("npz") or {}).items():
        np.savez(root / rel, **{Path(m).stem: np.load(root / m) for m in members})
        for member in members:
            (root / member).unlink()
    for old, new in (spec.get("rename") or {}).items():
        (root / old).rename(root / new)
    if spec.get("to_json"):
        (root / "bundle.json").write_text(json.dumps(yaml.safe_load((root / "bundle.yaml").read_text())))
        (root / "bundle.yaml").unlink()
    for rel in spec.get("npy_object", []):
        np.save(root / rel, np.array([{"a": 1}], dtype=object), allow_pickle=True)


def _line_of(text: str, fragment: str, occurrence: int) -> int:
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if fragment in line]
    assert len(lines) >= occurrence, f"{fragment!r} is not in the edited manifest"
    return lines[occurrence - 1]


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_negative_case(case: Path, example: Path) -> None:
    spec = yaml.safe_load(case.read_text())
    manifest = example / "bundle.yaml"
    text = _edit_manifest(manifest.read_text(), spec)
    manifest.write_text(text)
    _edit_files(example, spec)
    report = verify_bundle(example, Options(**spec.get("options", {})))
    got = [f.to_dict() for f in report.findings]
    for want in spec["expect"]:
        line = _line_of(text, want["line_of"], want.get("occurrence", 1)) if "line_of" in want else None
        matches = [
            f
            for f in got
            if f["id"] == want["id"]
            and f["severity"] == want["severity"]
            and f.get("file") == want.get("file", "bundle.yaml")
            and f.get("line") == line
            and want.get("message", "") in f["message"]
        ]
        assert matches, f"expected {want} at line {line}; got:\n" + "\n".join(map(str, got))
    if any(w["severity"] == "error" for w in spec["expect"]):
        assert report.status() == "fail"
    assert report.status(strict=True) == "fail"


@pytest.mark.parametrize("case", POSITIVE, ids=[c.stem for c in POSITIVE])
def test_positive_case(case: Path, example: Path) -> None:
    spec = yaml.safe_load(case.read_text())
    manifest = example / "bundle.yaml"
    manifest.write_text(_edit_manifest(manifest.read_text(), spec))
    _edit_files(example, spec)
    assert lock(example).ok  # an edited manifest is another release: it passes once locked as one
    report = verify_bundle(example, Options())
    assert report.status(strict=True) == "pass", [f.to_dict() for f in report.findings if f.severity.value != "info"]
    assert report.comparisons and all(c.status == "pass" for c in report.comparisons)
