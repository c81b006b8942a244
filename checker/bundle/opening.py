"""Opening a bundle: a folder, a manifest file, or an archive extracted (bundle/archives.py) into a temporary folder."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from checker.bundle.layout import MANIFEST_NAMES, find_manifest
from checker.errors import BundleError
from checker.findings import Finding


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
        import tempfile  # archives only: their modules cost a plain folder's run a share of its start

        from checker.bundle.archives import extract

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
