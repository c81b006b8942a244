"""Opening a bundle: a folder, a manifest file, or an archive extracted safely into a temporary folder."""

from __future__ import annotations

import contextlib
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from checker import findings as F
from checker.errors import BundleError
from checker.findings import Finding
from checker.manifest import MANIFEST_NAMES, find_manifest

MAX_ARCHIVE_MEMBERS = 20_000
MAX_ARCHIVE_BYTES = 16 << 30  # 16 GiB unpacked: far above a real edge model, far below filling a disk
MAX_COMPRESSION_RATIO = 200  # a member that expands more than this is a bomb, not a model


@dataclass
class OpenedBundle:
    root: Path  # the folder the manifest's paths are relative to
    manifest_path: Path | None
    display: str  # the path as the user gave it
    findings: list[Finding]


def is_archive(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith((".tar.gz", ".tgz", ".tar", ".zip"))


@contextlib.contextmanager
def open_bundle(path: Path) -> Iterator[OpenedBundle]:
    """Yield the bundle's folder and manifest; an archive's temporary folder is removed afterwards."""
    if path.is_dir():
        yield OpenedBundle(path, find_manifest(path), str(path), [])
    elif path.is_file() and (path.name in MANIFEST_NAMES or path.suffix in (".yaml", ".yml", ".json")):
        yield OpenedBundle(path.parent, path, str(path), [])
    elif path.is_file() and is_archive(path):
        with tempfile.TemporaryDirectory(prefix="checker-") as tmp:
            dest = Path(tmp)
            problems = extract(path, dest)
            root = _archive_root(dest)
            manifest = None if problems else find_manifest(root)
            yield OpenedBundle(root, manifest, str(path), problems)
    else:
        raise BundleError(f"{path}: not a bundle folder, a manifest (bundle.yaml) or an archive (.tar.gz, .zip)")


def _archive_root(dest: Path) -> Path:
    """An archive may hold the bundle at its top or inside one folder."""
    if find_manifest(dest):
        return dest
    entries = [p for p in dest.iterdir()]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return dest


def _member_problem(name: str, size: int, packed: int | None, totals: list[int]) -> str | None:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or "\\" in name or "\x00" in name:
        return f"member '{name}' would land outside the bundle"
    totals[0] += 1
    totals[1] += size
    if totals[0] > MAX_ARCHIVE_MEMBERS:
        return f"more than {MAX_ARCHIVE_MEMBERS} members"
    if totals[1] > MAX_ARCHIVE_BYTES:
        return f"more than {MAX_ARCHIVE_BYTES} bytes unpacked"
    if packed is not None and size > 1 << 20 and size > MAX_COMPRESSION_RATIO * max(packed, 1):
        return f"member '{name}' expands {size // max(packed, 1)}x (a decompression bomb)"
    return None


def extract(archive: Path, dest: Path) -> list[Finding]:
    """Extract regular files and folders only; refuse links, devices, escapes and bombs with a finding."""
    try:
        unpack = _extract_zip if archive.name.lower().endswith(".zip") else _extract_tar
        problem = unpack(archive, dest)
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
        problem = f"cannot be read ({exc})"
    if problem is None:
        return []
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(exist_ok=True)
    return [F.error(F.BUNDLE_PATH, f"{archive.name}: archive refused: {problem}", archive.name)]


def _extract_tar(archive: Path, dest: Path) -> str | None:
    totals = [0, 0]
    packed_size = archive.stat().st_size
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            if not (member.isfile() or member.isdir()):
                return f"member '{member.name}' is a link or a device; only files and folders are accepted"
            problem = _member_problem(member.name, member.size, None, totals)
            if problem:
                return problem
            if totals[1] > MAX_COMPRESSION_RATIO * packed_size and totals[1] > 64 << 20:
                return "the archive expands more than 200x (a decompression bomb)"
            _write_member(dest, member.name, member.isdir(), lambda m=member: tar.extractfile(m))
    return None


def _extract_zip(archive: Path, dest: Path) -> str | None:
    totals = [0, 0]
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0: the zip records no Unix file type
            if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
                return f"member '{info.filename}' is a link or a device; only files and folders are accepted"
            problem = _member_problem(info.filename, info.file_size, info.compress_size, totals)
            if problem:
                return problem
            _write_member(dest, info.filename, info.is_dir(), lambda i=info: zf.open(i))
    return None


def _write_member(dest: Path, name: str, is_dir: bool, opener: object) -> None:
    target = dest / PurePosixPath(name)
    if is_dir:
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    source = opener()  # type: ignore[operator]
    if source is None:
        return
    with source, target.open("xb") as out:
        # Copy in bounded chunks and stop at the declared size: headers can lie.
        shutil.copyfileobj(source, out, 1 << 20)
