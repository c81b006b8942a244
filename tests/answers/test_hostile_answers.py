"""Hostile stored answers (a pull request's files): huge, deep, NaN, wrong types, not the format, a pickle, a
symlink out of the bundle. Each is answers.invalid naming the file, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from answerkit import write_detector_bundle

from checker.context import Options
from checker.verify import verify_bundle

pytest.importorskip("PIL")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_detector_bundle(tmp_path_factory.mktemp("hostile") / "b", cases=2)


CONTENTS: dict[str, bytes] = {
    "nan": b'[{"box": [1, 2, 3, 4], "label": "dog", "score": NaN}]',
    "deep": b"[" * 5000 + b"]" * 5000,
    "types": b'[{"box": "1,2,3,4", "label": "dog", "score": 0.5}]',
    "label": b'[{"box": [1, 2, 3, 4], "label": {"x": 1}, "score": 0.5}]',
    "extra": b'[{"box": [1, 2, 3, 4], "label": "dog", "score": 0.5, "exec": "rm"}]',
    "scalar": b"17",
    "broken": b'[{"box": [1, 2, 3',
    "binary": b"\xff\xfe\x00garbage",
    "many": json.dumps([{"box": [1, 2, 3, 4], "label": "dog", "score": 0.5}] * 10_001).encode(),
    "huge": b"[" + b" " * (17 << 20) + b"]",
}


@pytest.mark.parametrize("name", sorted(CONTENTS))
def test_a_hostile_answer_file_is_answers_invalid(bundle: Path, tmp_path: Path, name: str) -> None:
    import shutil

    root = tmp_path / "b"
    shutil.copytree(bundle, root)
    (root / "answer.json").write_bytes(CONTENTS[name])
    manifest = json.loads((root / "bundle.json").read_text())
    manifest["comparison"]["cases"][0]["expected_answers"] = {"objects": "answer.json"}
    (root / "bundle.json").write_text(json.dumps(manifest))
    report = verify_bundle(root, Options(gain_budget_s=0.0))
    assert not [f for f in report.findings if f.id == "internal.error"]
    (finding,) = [f for f in report.findings if f.id == "answers.invalid"]
    assert "answer.json" in finding.message and finding.line is not None


def test_a_pickled_or_wrong_npy_and_a_link_out_of_the_bundle_are_refused(bundle: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "b"
    shutil.copytree(bundle, root)
    np.save(root / "objects.npy", np.array([{"box": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "outside.json").write_text("[]")
    (root / "link.json").symlink_to(tmp_path / "outside.json")
    manifest = json.loads((root / "bundle.json").read_text())
    manifest["comparison"]["cases"][0]["expected_answers"] = {"objects": "objects.npy"}
    manifest["comparison"]["cases"][1]["expected_answers"] = {"objects": "link.json"}
    (root / "bundle.json").write_text(json.dumps(manifest))
    report = verify_bundle(root, Options(gain_budget_s=0.0))
    ids = [f.id for f in report.findings]
    assert "internal.error" not in ids
    assert any(f.id == "answers.invalid" and "objects.npy" in f.message for f in report.findings)
    assert "bundle.path" in ids  # the link leaves the bundle: refused before anything reads it
