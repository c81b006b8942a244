"""Bundle-relative paths: the only way a manifest path becomes a file we open."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath


class BundlePathError(ValueError):
    """A manifest path that is absolute, leaves the bundle, or goes through a link that leaves it."""


def check_relative(rel: str) -> PurePosixPath:
    """Refuse paths that could name anything outside the bundle, before the file system is touched."""
    if not isinstance(rel, str) or not rel.strip():
        raise BundlePathError("the path is empty")
    if "\\" in rel or "\x00" in rel:
        raise BundlePathError(f"'{rel}' must use '/' and no NUL or backslash")
    pure = PurePosixPath(rel)
    if pure.is_absolute() or (len(rel) > 1 and rel[1] == ":"):
        raise BundlePathError(f"'{rel}' is absolute; paths are relative to the manifest's folder")
    if ".." in pure.parts:
        raise BundlePathError(f"'{rel}' uses '..'; paths must stay inside the bundle")
    return pure


def resolve_inside(root: Path, rel: str) -> Path:
    """The real path of `rel` under `root`, following links only while they stay inside `root`."""
    pure = check_relative(rel)
    real_root = root.resolve()
    target = (real_root / pure).resolve()
    if target != real_root and real_root not in target.parents:
        raise BundlePathError(f"'{rel}' goes through a link that leaves the bundle")
    return target


def glob_inside(root: Path, pattern: str) -> list[str]:
    """Bundle-relative paths matching a glob, sorted; matches that leave the bundle are dropped."""
    check_relative(pattern)
    real_root = root.resolve()
    found = []
    for match in sorted(real_root.glob(pattern)):
        rel = match.relative_to(real_root).as_posix()
        try:
            resolve_inside(real_root, rel)
        except BundlePathError:
            continue
        found.append(rel)
    return found


def walk_files(root: Path, limit: int) -> list[str]:
    """Every regular file under `root`, bundle-relative and sorted; links are not followed. At most `limit`."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".git"))
        for name in sorted(filenames):
            out.append(Path(dirpath, name).relative_to(root).as_posix())
            if len(out) >= limit:
                return out
    return out
