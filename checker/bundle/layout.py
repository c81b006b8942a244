"""Where a bundle keeps its manifest: the names it may have, and which of them a folder holds."""

from __future__ import annotations

from pathlib import Path

MANIFEST_NAMES = ("bundle.yaml", "bundle.yml", "bundle.json")


def find_manifest(folder: Path) -> Path | None:
    for name in MANIFEST_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def locate(path: Path) -> Path | None:
    """The manifest of a bundle folder, or the manifest file itself; None when there is none yet."""
    if path.is_dir():
        return find_manifest(path)
    return path if path.is_file() else None
