"""One mistake, one finding: a shape written in another layout is one error that says so, a variant with the
baseline's inputs does not repeat the baseline's mismatch, and after an edit the stale digest comes after the
error the edit made, worded as the field that changed since the last lock."""

from __future__ import annotations

import shutil
from pathlib import Path

from bundlekit import EXAMPLE

from checker import findings as F
from checker.context import Options
from checker.remedies import remedy
from checker.verify import verify_bundle


def edited(tmp_path: Path, old: str, new: str) -> Path:
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    manifest = root / "bundle.yaml"
    text = manifest.read_text(encoding="utf-8")
    assert text.count(old) == 1
    manifest.write_text(text.replace(old, new), encoding="utf-8")
    return root


def test_an_nhwc_shape_where_the_graph_takes_nchw_is_one_error_that_says_so(tmp_path: Path) -> None:
    root = edited(tmp_path, "shape: [batch, 3, 32, 32]", "shape: [batch, 32, 32, 3]")
    report = verify_bundle(root, Options(run_comparison=False))
    io = [f for f in report.findings if f.id == F.GRAPH_IO]
    assert len(io) == 1, [f.message for f in io]  # not one per axis, and not again for the int8 variant
    assert "NHWC where the graph takes NCHW" in io[0].message and io[0].line == 20
    assert "[batch, 32, 32, 3]" in io[0].message and "[batch, 3, 32, 32]" in io[0].message


def test_a_wrong_size_that_is_no_permutation_is_named_per_axis(tmp_path: Path) -> None:
    root = edited(tmp_path, "shape: [batch, 3, 32, 32]", "shape: [batch, 3, 32, 30]")
    io = [f for f in verify_bundle(root, Options(run_comparison=False)).findings if f.id == F.GRAPH_IO]
    assert [f.message for f in io] == ["'pixel_values' axis 3: the manifest says 30, the graph fixes 32 (the graph: "
                                       "[batch, 3, 32, 32])"]  # fmt: skip


def test_an_edited_locked_manifest_lists_the_substantive_error_before_the_digest(tmp_path: Path) -> None:
    root = edited(tmp_path, "shape: [batch, 3, 32, 32]", "shape: [batch, 32, 32, 3]")
    errors = [f for f in verify_bundle(root, Options(run_comparison=False)).findings if f.severity.value == "error"]
    ids = [f.id for f in errors]
    assert ids[0] == F.GRAPH_IO and ids[-1] == F.DIGEST, ids
    digest = errors[-1]
    assert digest.message.startswith("manifest field 'inputs[0].shape' changed since the last lock (")
    assert remedy(digest, "models/b").startswith("undo the edit of the field named, or, if the change is intended")
