"""`checker pack`: one deterministic archive of a verified bundle, with the digest verify reports."""

from __future__ import annotations

import gzip
import os
import re
import tarfile
from pathlib import Path

import pytest
from releasekit import Cli, verify_json
from ruamel.yaml import YAML

from checker.manifest.named import named_files

STEM = "mobilenet-tiny-1.0.0"


@pytest.fixture(autouse=True)
def _no_build_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def _digest_line(out: str) -> str:
    found = re.search(r"bundle digest (sha256:[0-9a-f]{64})", out)
    assert found, out
    return found.group(1)


def test_packing_twice_gives_the_same_bytes_and_the_digest_verify_reports(
    example: Path, tmp_path: Path, cli: Cli
) -> None:
    first, second = tmp_path / "one" / f"{STEM}.tar.gz", tmp_path / "two" / f"{STEM}.tar.gz"
    first.parent.mkdir()
    second.parent.mkdir()
    code, out, err = cli("pack", example, "-o", first)
    assert code == 0, out + err
    digest = _digest_line(out)
    # Times and permissions of the files on disk do not reach the archive.
    for path in example.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
        path.chmod(0o700 if path.is_dir() else 0o600)
    code, out, err = cli("pack", example, "-o", second)
    assert code == 0, err
    assert first.read_bytes() == second.read_bytes()
    assert _digest_line(out) == digest
    assert verify_json(cli, example)[1]["digest"] == digest
    code, from_archive = verify_json(cli, first)
    assert code == 0, from_archive["findings"]
    assert from_archive["digest"] == digest


def test_the_archive_holds_the_manifest_and_exactly_the_named_files_normalised(
    example: Path, tmp_path: Path, cli: Cli
) -> None:
    (example / "notes.txt").write_text("not part of the release")
    archive = tmp_path / "out.tgz"
    code, _out, err = cli("pack", example, "-o", archive)
    assert code == 0, err
    data = YAML(typ="safe").load((example / "bundle.yaml").read_text(encoding="utf-8"))
    expected = sorted({n.rel for n in named_files(data, example)} | {"bundle.yaml", "bundle.sha256"})
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == [f"{STEM}/{rel}" for rel in expected]
    for member in members:
        assert member.isreg() and member.mode == 0o644 and member.mtime == 0
        assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, "", "")
    raw = archive.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0", "gzip header time"
    assert not raw[3] & 0x08, "gzip header file name"
    with tarfile.open(archive, "r:gz") as tar:
        extracted = tar.extractfile(f"{STEM}/labels.txt")
        assert extracted is not None and extracted.read() == (example / "labels.txt").read_bytes()
    assert gzip.decompress(raw)  # a whole, valid gzip stream


def test_a_failing_bundle_is_not_packed_and_its_findings_are_shown(example: Path, tmp_path: Path, cli: Cli) -> None:
    (example / "cases" / "dusk" / "logits.npy").write_bytes(b"changed")
    archive = tmp_path / f"{STEM}.tar.gz"
    code, out, err = cli("pack", example, "-o", archive)
    assert code == 1
    assert "FAIL" in out and "bundle.digest" in out and "not packed" in err
    assert not archive.exists() and not list(tmp_path.glob(".*.tmp"))


def test_the_default_name_is_name_dash_version(
    example: Path, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("pack", example / "bundle.yaml")
    assert code == 0, err
    assert f"into {STEM}.tar.gz" in out and (tmp_path / f"{STEM}.tar.gz").is_file()


@pytest.mark.parametrize(("target", "message"), [("x.zip", "must end in .tar.gz"), (None, "is an archive already")])
def test_usage_errors(example: Path, tmp_path: Path, cli: Cli, target: str | None, message: str) -> None:
    if target is None:
        archive = tmp_path / "made.tar.gz"
        assert cli("pack", example, "-o", archive)[0] == 0
        code, _out, err = cli("pack", archive)
    else:
        code, _out, err = cli("pack", example, "-o", tmp_path / target)
    assert code == 2 and message in err and "Traceback" not in err
