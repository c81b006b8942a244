"""One mistake, one finding: a shape written in another layout is one error that says so, a variant with the
baseline's inputs does not repeat the baseline's mismatch, after an edit the stale digest comes after the error
the edit made (worded as the field that changed since the last lock), and a wrong-rank case tensor is one error
at its case with what follows from it folded under it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
from bundlekit import EXAMPLE

from checker import findings as F
from checker.cli import main
from checker.context import Options
from checker.remedies import remedy
from checker.render.markdown import render
from checker.reports.model import Report
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


def test_a_wrong_rank_case_tensor_is_one_error_at_its_case_with_the_consequences_folded(tmp_path: Path) -> None:
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    tensor = root / "cases" / "dusk" / "pixel_values.npy"
    np.save(tensor, np.load(tensor).reshape(1, -1)[:, :10])
    assert main(["lock", str(root)]) == 0
    report = verify_bundle(root, Options())
    errors = [f for f in report.findings if f.severity.value == "error"]
    (case,) = [f for f in errors if f.id == F.COMPARISON_CASE]
    rest = [f for f in errors if f is not case]
    assert {f.id for f in rest} >= {F.COMPARISON_RULE, F.COMPARISON_RUNTIME}
    assert all(f.details.get("consequence_of") == "case 'dusk'" for f in rest), [(f.id, f.details) for f in rest]
    md = render(Report("0.1.0", [report]))
    entries = re.findall(r"^(\d+)\. \*\*([a-z_.]+)\*\*", md, re.M)
    assert entries == [("1", F.COMPARISON_CASE)], entries  # one mistake, one numbered entry, one fix
    follows = md[md.index("**Follows from it:**") :].split("</details>")[0]
    assert all(f"**{f.id}**" in follows for f in rest)
    assert "re-export" not in md.split("<details>")[0]  # no fix of a rule that only failed on the broken case
    # The text report folds them the same way: listed under their case's error, with no fix of their own.
    from checker.render.text import render as render_text

    text = render_text(Report("0.1.0", [report]), colour=False)
    fixes = [line for line in text.splitlines() if line.strip().startswith("fix:")]
    follows_lines = [line for line in text.splitlines() if line.strip().startswith("follows from it:")]
    assert len(follows_lines) == len(rest) and all(any(f.id in x for x in follows_lines) for f in rest)
    error_lines = [line for line in text.splitlines() if line.strip().startswith("error ")]
    assert len(error_lines) == 1 and F.COMPARISON_CASE in error_lines[0]
    assert len(fixes) == len([f for f in report.findings if f.severity.value in ("error", "warning")]) - len(rest)
    assert "re-export" not in text
