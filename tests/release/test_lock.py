"""`checker lock` keeps comments and order, and `checker verify` recomputes what it wrote."""

from __future__ import annotations

import re
from pathlib import Path

from checker.context import Options
from checker.release.lock import lock
from checker.verify import verify_bundle


def strip(text: str) -> str:
    text = re.sub(r", sha256: [0-9a-f]{64}", "", text)
    return re.sub(r"(?m)^\s*(sha256|digest): (sha256:)?[0-9a-f]{64}\n", "", text)


def test_lock_round_trip_keeps_comments_and_is_idempotent(example: Path) -> None:
    manifest = example / "bundle.yaml"
    unlocked = strip(manifest.read_text())
    manifest.write_text(unlocked)
    result = lock(example)
    locked = manifest.read_text()
    assert result.ok and result.digest
    assert "# 1/255" in locked and locked.startswith("# yaml-language-server")
    assert strip(locked) == unlocked  # only digests were added
    assert f"digest: {result.digest}" in locked
    assert lock(example).digest == result.digest and manifest.read_text() == locked
    report = verify_bundle(example, Options())
    assert report.digest == result.digest
    assert not [f for f in report.findings if f.id == "bundle.digest"]


def test_lock_refuses_missing_files(example: Path) -> None:
    (example / "labels.txt").unlink()
    result = lock(example)
    assert not result.ok and "labels.txt" in result.messages[0]


def test_digest_is_over_sorted_lines(example: Path) -> None:
    import hashlib

    from checker.readers.digest import bundle_digest

    digests = {"b.txt": "2" * 64, "a.txt": "1" * 64}
    expected = hashlib.sha256(f"{'1' * 64}  a.txt\n{'2' * 64}  b.txt\n".encode()).hexdigest()
    assert bundle_digest(digests) == "sha256:" + expected


def test_lock_writes_each_labels_digest_beside_its_path_answers_included(example: Path) -> None:
    manifest = example / "bundle.yaml"
    text = manifest.read_text()
    answers = "answers:\n  - {name: top, kind: classes, from: logits, labels: {path: labels.txt}}\n"
    manifest.write_text(text.replace("\noutputs:\n", f"\n{answers}outputs:\n", 1))
    result = lock(example)
    assert result.ok, result.messages
    digest = re.search(r"labels: \{path: labels.txt, sha256: ([0-9a-f]{64})\}", manifest.read_text())
    assert digest is not None  # the answer's labels, as the output's
    assert manifest.read_text().count(f"sha256: {digest.group(1)}") == 2
    report = verify_bundle(example, Options())
    assert report.digest == result.digest and report.status() == "pass", report.findings


def test_lock_refuses_to_name_the_bundles_own_manifest(example: Path) -> None:
    manifest = example / "bundle.yaml"
    files = "  version: 1.0.0\n  files: [bundle.yaml]\n"
    manifest.write_text(manifest.read_text().replace("  version: 1.0.0\n", files))
    before = manifest.read_text()
    result = lock(example)
    assert not result.ok and "the bundle's manifest, which lock and sign rewrite" in result.messages[0]
    assert manifest.read_text() == before  # nothing written


def test_two_names_of_one_file_each_get_its_digest(example: Path) -> None:
    (example / "labels-link.txt").symlink_to("labels.txt")
    manifest = example / "bundle.yaml"
    files = "  version: 1.0.0\n  files: [labels-link.txt, README.md]\n"
    manifest.write_text(manifest.read_text().replace("  version: 1.0.0\n", files))
    (example / "README.md").write_text("# mobilenet-tiny\n")
    result = lock(example)
    assert result.ok, result.messages
    listed = dict(line.split("  ")[::-1] for line in (example / "bundle.sha256").read_text().splitlines())
    assert listed["labels-link.txt"] == listed["labels.txt"] != listed["README.md"]
    report = verify_bundle(example, Options())
    assert report.status() == "pass", report.findings
