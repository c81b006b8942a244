"""Archives: a bundle's .tar.gz or .zip extracted safely (files and folders only, bounded) into a folder."""

from __future__ import annotations

import lzma
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO

from checker import findings as F
from checker.findings import Finding

MAX_ARCHIVE_MEMBERS = 20_000
MAX_ARCHIVE_BYTES = 16 << 30  # 16 GiB unpacked: far above a real edge model, far below filling a disk
MAX_COMPRESSION_RATIO = 200  # a member that expands more than this is a bomb, not a model


class _Refused(Exception):
    """An archive member we will not write; carries the finding id."""

    def __init__(self, fid: str, message: str) -> None:
        super().__init__(message)
        self.fid = fid


@dataclass
class _Budget:
    """What one archive may make us write: members, bytes, and bytes per packed byte."""

    packed: int
    members: int = 0
    unpacked: int = 0

    def admit(self, name: str, size: int, packed: int | None = None) -> None:
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts or "\\" in name or "\x00" in name:
            raise _Refused(F.BUNDLE_PATH, f"member '{name}' would land outside the bundle")
        self.members += 1
        self.unpacked += size
        if self.members > MAX_ARCHIVE_MEMBERS:
            raise _Refused(F.BUNDLE_LIMIT, f"more than {MAX_ARCHIVE_MEMBERS} members")
        if self.unpacked > MAX_ARCHIVE_BYTES:
            raise _Refused(F.BUNDLE_LIMIT, f"more than {MAX_ARCHIVE_BYTES} bytes unpacked")
        if packed is not None and size > 1 << 20 and size > MAX_COMPRESSION_RATIO * max(packed, 1):
            raise _Refused(F.BUNDLE_LIMIT, f"member '{name}' expands {size // max(packed, 1)}x (a decompression bomb)")
        if self.unpacked > 64 << 20 and self.unpacked > MAX_COMPRESSION_RATIO * self.packed:
            raise _Refused(
                F.BUNDLE_LIMIT, f"the archive expands more than {MAX_COMPRESSION_RATIO}x (a decompression bomb)"
            )


def _not_a_file(name: str) -> _Refused:
    return _Refused(F.BUNDLE_PATH, f"member '{name}' is a link or a device; only files and folders are accepted")


def extract(archive: Path, dest: Path) -> list[Finding]:
    """Extract regular files and folders only; refuse links, devices, escapes and bombs with a finding."""
    try:
        unpack = _extract_zip if archive.name.lower().endswith(".zip") else _extract_tar
        unpack(archive, dest, _Budget(archive.stat().st_size))
        return []
    except _Refused as exc:
        fid, problem, unreadable = exc.fid, str(exc), False
    except UNREADABLE as exc:
        fid, problem, unreadable = F.BUNDLE_PATH, f"cannot be read ({_why(exc)})", True
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(exist_ok=True)
    # The archive's name and whether it could be read at all tell the remedy it is the archive to fix.
    message = f"{archive.name}: archive refused: {problem}"
    return [F.error(fid, message, archive.name, archive=archive.name, unreadable=unreadable)]


# What a corrupt, truncated, encrypted or exotic archive raises while it is read: the compressors' own errors
# (zlib, lzma, bz2 raise OSError), zipfile's RuntimeError (encrypted members), NotImplementedError (a
# compression method it lacks) and ValueError (undecodable names, inconsistent flags).
UNREADABLE = (
    OSError,
    EOFError,
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    RuntimeError,
    NotImplementedError,
    ValueError,
)


def _why(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "a member is encrypted; bundles are not"
    if isinstance(exc, NotImplementedError):
        return f"a member uses a compression method this checker does not read ({exc}); use deflate"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _extract_tar(archive: Path, dest: Path, budget: _Budget) -> None:
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            if not (member.isfile() or member.isdir()):
                raise _not_a_file(member.name)
            budget.admit(member.name, member.size)
            _write_member(dest, member.name, member.isdir(), partial(tar.extractfile, member))


def _extract_zip(archive: Path, dest: Path, budget: _Budget) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0: the zip records no Unix file type
            if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
                raise _not_a_file(info.filename)
            budget.admit(info.filename, info.file_size, info.compress_size)
            _write_member(dest, info.filename, info.is_dir(), partial(zf.open, info))


def _write_member(dest: Path, name: str, is_dir: bool, opener: Callable[[], IO[bytes] | None]) -> None:
    target = dest / PurePosixPath(name)
    if is_dir:
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    source = opener()
    if source is None:
        return
    with source, target.open("xb") as out:
        # Copy in bounded chunks and stop at the declared size: headers can lie.
        shutil.copyfileobj(source, out, 1 << 20)
