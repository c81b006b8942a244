"""File digests: streamed, in parallel (hashlib releases the GIL), and the bundle digest over them."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

CHUNK = 1 << 20

# Which definition of the bundle digest a digest was made by. 1: the named files only (the first contract);
# 2: the named files and every manifest field (docs/manifest.md, "The bundle digest"). A digest records the
# definition that made it where it is written for others (an attestation's subject), and a digest that
# matches the files alone is recognised as the earlier definition's and said so.
DIGEST_DEFINITION = 2
EARLIER_DEFINITION = 1


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of one file, read in 1 MiB chunks into one reused buffer (no copy per chunk)."""
    digest = hashlib.sha256()
    with path.open("rb", buffering=0) as handle:
        # A case file of a few KiB gets a buffer of its size: zeroing 1 MiB per file cost more than hashing it.
        buffer = bytearray(min(CHUNK, os.fstat(handle.fileno()).st_size + 1))
        view = memoryview(buffer)
        while n := handle.readinto(buffer):
            digest.update(view[:n])
    return digest.hexdigest()


def sha256_small(path: str) -> str:
    """Hex SHA-256 of a regular file named by a string, read whole when it is small (a case tensor of a few
    KiB), in chunks otherwise: a verdict store hashes every file of hundreds of bundles, and the file objects
    of `sha256_file` cost a small file more than its hashing. OSError for what is not a regular file, and for a
    link (the path is a real path, resolved inside the bundle: a link there now was put there since)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if info.st_size > CHUNK:
            return sha256_file(Path(path))
        digest = hashlib.sha256()
        # Reads of the file's size: a buffer of CHUNK would cost each small file the mapping of a megabyte.
        while data := os.read(fd, info.st_size + 1):
            digest.update(data)
        return digest.hexdigest()
    finally:
        os.close(fd)


PARALLEL_FROM_BYTES = 4 << 20  # below this a file hashes in about a millisecond, less than a hand-over costs


def sha256_files(paths: Iterable[Path]) -> dict[Path, str]:
    """Digests of several files: large ones hashed concurrently, to keep every core busy; small ones (a
    bundle's cases) one after another, since a thread pool costs them more than it saves."""
    unique = list(dict.fromkeys(paths))
    large = {p for p in unique if _size(p) >= PARALLEL_FROM_BYTES}
    digests = {p: sha256_file(p) for p in unique if p not in large}
    if len(large) <= 1:
        digests.update((p, sha256_file(p)) for p in large)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(len(large), os.cpu_count() or 1, 8)) as pool:
            ordered = list(large)
            digests.update(zip(ordered, pool.map(sha256_file, ordered)))
    return {p: digests[p] for p in unique}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # hashed alone, where the error shows


def bundle_digest(file_digests: Mapping[str, str]) -> str:
    """`sha256:` + SHA-256 of the lines `<sha256>  <path>` of every named file and (given with them, named
    `manifest:<pointer>`) every manifest field, sorted by name. Of the named files alone, it is the digest by
    the earlier definition (EARLIER_DEFINITION)."""
    lines = "".join(f"{file_digests[rel]}  {rel}\n" for rel in sorted(file_digests))
    return "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest()
