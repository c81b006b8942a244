"""File digests: small files hashed one after another, large ones side by side, the same digests either way."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from checker.readers import digest


@pytest.mark.parametrize("parallel_from", [1, 1 << 10, 1 << 40])
def test_digests_are_sha256_whichever_way_they_are_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel_from: int
) -> None:
    monkeypatch.setattr(digest, "PARALLEL_FROM_BYTES", parallel_from)
    sizes = [0, 1, 1000, digest.CHUNK - 1, digest.CHUNK, digest.CHUNK + 1, 3 * digest.CHUNK + 17]
    paths = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"f{i}.bin"
        path.write_bytes((bytes(range(i, 251)) + bytes(range(i))) * (size // 251) + bytes(range(size % 251)))
        paths.append(path)
    got = digest.sha256_files([*paths, paths[0]])  # a repeated path is hashed once
    assert list(got) == paths
    assert got == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


class Hashes:
    """Counts the SHA-256 objects made: one per file read and hashed."""

    def __init__(self) -> None:
        self.made = 0

    def sha256(self) -> hashlib._Hash:
        self.made += 1
        return hashlib.sha256()


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> Hashes:
    counted = Hashes()
    monkeypatch.setattr(digest, "hashlib", counted)
    monkeypatch.setattr(digest, "_KEPT", {})
    monkeypatch.setattr(digest, "KEPT_FROM_BYTES", 1 << 10)
    return counted


def large(path: Path, fill: bytes) -> Path:
    path.write_bytes(fill * (4 << 10))
    return path


def test_a_large_file_is_read_once_while_it_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hashes: Hashes
) -> None:
    monkeypatch.setattr(digest, "RACY_NS", 0)  # as if written long before it is hashed
    weights = large(tmp_path / "weights.bin", b"a")
    small = tmp_path / "labels.txt"
    small.write_bytes(b"cat\ndog\n")
    link = tmp_path / "same.bin"
    link.hardlink_to(weights)  # the same content under another name (a new link sets the file's ctime)
    first = digest.sha256_files([weights, small])
    again = digest.sha256_files([weights, small])  # a look-up's digests, then the run's
    assert first == again == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (weights, small)}
    assert hashes.made == 3  # the large file once, the small one each time
    assert digest.sha256_file(link) == first[weights]
    assert hashes.made == 3


def test_a_large_file_written_since_it_was_hashed_is_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hashes: Hashes
) -> None:
    monkeypatch.setattr(digest, "RACY_NS", 0)
    weights = large(tmp_path / "weights.bin", b"a")
    before, written = digest.sha256_file(weights), weights.stat().st_mtime_ns
    time.sleep(0.05)  # past the clock's tick: the write sets another ctime
    with weights.open("r+b") as handle:  # the same size and inode, other content
        handle.write(b"b")
    os.utime(weights, ns=(written, written))  # its times set back as they were: only its ctime tells
    after = digest.sha256_file(weights)
    assert after == hashlib.sha256(weights.read_bytes()).hexdigest() != before
    assert hashes.made == 2


def test_a_file_changed_just_before_it_is_hashed_is_never_kept(tmp_path: Path, hashes: Hashes) -> None:
    """A write within the clock's tick after hashing could leave its ctime as it was: such a file (any file
    written less than RACY_NS ago) is hashed each time it is asked for."""
    weights = large(tmp_path / "weights.bin", b"a")
    digest.sha256_file(weights)
    with weights.open("r+b") as handle:
        handle.write(b"b")
    assert digest.sha256_file(weights) == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert hashes.made == 2
    assert digest._KEPT == {}
