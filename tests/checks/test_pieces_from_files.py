"""Completeness from facts: a piece whose declared file is not in the bundle is not ticked, in any renderer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bundlekit import EXAMPLE

from checker.cli import main


def verify(bundle: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["verify", str(bundle), "--format", fmt]) == 1
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("deleted", "piece"), [("labels.txt", "labels"), ("cases/dusk/logits.npy", "comparison_inputs")]
)
def test_a_deleted_file_unticks_its_piece_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], deleted: str, piece: str
) -> None:
    bundle = tmp_path / "m"
    shutil.copytree(EXAMPLE, bundle)
    (bundle / deleted).unlink()
    report = json.loads(verify(bundle, "json", capsys))
    pieces = report["bundles"][0]["pieces"]
    assert pieces[piece] == "missing"
    assert [p for p, state in pieces.items() if state == "missing"] == [piece]
    assert any(f["id"] == "bundle.file_missing" for f in report["bundles"][0]["findings"])
    assert f"✗ {piece}" in verify(bundle, "text", capsys)
    markdown = verify(bundle, "markdown", capsys)
    shown = piece.replace("_", " ")  # the Markdown checklist writes a piece's name in words
    assert (
        "pieces (6 of 7 present)" in markdown
        and "(6 of 7 present)" in markdown.split("**The seven pieces**")[1]
        and f"- [ ] {shown}: **missing**" in markdown
    )
    assert f"- [x] {shown}" not in markdown
    assert f"the {piece} piece is missing" in verify(bundle, "junit", capsys)


def test_an_output_named_by_a_list_is_a_schema_finding_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest the schema refuses still reaches the completeness stage: a name that is a list is no key of a
    set (found by the fuzz suite)."""
    bundle = tmp_path / "m"
    shutil.copytree(EXAMPLE, bundle)
    manifest = bundle / "bundle.yaml"
    text = manifest.read_text()
    assert "- name: logits\n" in text
    manifest.write_text(text.replace("- name: logits\n", "- name: [logits]\n", 1))
    report = json.loads(verify(bundle, "json", capsys))
    ids = [f["id"] for f in report["bundles"][0]["findings"]]
    assert "manifest.schema" in ids and "internal.error" not in ids
