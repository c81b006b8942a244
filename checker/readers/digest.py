"""File digests: streamed, in parallel (hashlib releases the GIL), and the bundle digest over them."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of one file, read in 1 MiB chunks into one reused buffer (no copy per chunk)."""
    digest = hashlib.sha256()
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as handle:
        while n := handle.readinto(buffer):
            digest.update(view[:n])
    return digest.hexdigest()


def sha256_files(paths: Iterable[Path]) -> dict[Path, str]:
    """Digests of several files, hashed concurrently: large files keep every core busy."""
    unique = list(dict.fromkeys(paths))
    if len(unique) <= 1:
        return {p: sha256_file(p) for p in unique}
    workers = min(len(unique), os.cpu_count() or 1, 8)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(unique, pool.map(sha256_file, unique)))


def bundle_digest(file_digests: Mapping[str, str]) -> str:
    """`sha256:` + SHA-256 of the lines `<sha256>  <path>` of every named file, sorted by path."""
    lines = "".join(f"{file_digests[rel]}  {rel}\n" for rel in sorted(file_digests))
    return "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest()
