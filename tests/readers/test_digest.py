"""File digests: small files hashed one after another, large ones side by side, the same digests either way."""

from __future__ import annotations

import hashlib
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
