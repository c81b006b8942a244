"""A bundle's digest worked out without running its checks: the manifest parsed and checked against the schema,
every named file hashed, every manifest field digested, exactly as the files stage does (`checks/files.py`), so
that a verdict can be looked up before anything else runs. A bundle whose digest cannot be had this way (a
named file missing or outside the bundle, a manifest the schema refuses) has none: it runs, and its stages say
why."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.bundle.opening import OpenedBundle
from checker.bundle.paths import BundlePathError, check_relative, resolve_under
from checker.manifest import written
from checker.manifest.canonical import field_digests
from checker.manifest.load import Manifest, load_manifest
from checker.manifest.named import named_files
from checker.readers.digest import bundle_digest, sha256_files


@dataclass
class Identity:
    """The bundle as its digest names it."""

    manifest: Manifest
    root: Path
    digest: str
    files: dict[str, str]  # bundle-relative path -> sha256 of each named file

    @property
    def data(self) -> dict[str, Any]:
        return self.manifest.data


def identify(opened: OpenedBundle) -> Identity | None:
    """The bundle's identity, or None when a check would have to say why it has none."""
    if opened.manifest_path is None or opened.findings:
        return None
    manifest, found = load_manifest(opened.manifest_path)
    if manifest is None or found:
        return None
    files = named_paths(manifest.data, opened.root)
    if files is None:
        return None
    try:
        hashed = sha256_files(files.values())
    except OSError:
        return None
    digests = {rel: hashed[path] for rel, path in files.items()}
    return Identity(manifest, opened.root, bundle_digest({**digests, **field_digests(manifest.data)}), digests)


def named_paths(data: dict[str, Any], root: Path) -> dict[str, Path] | None:
    """Every named file's real path inside the bundle, or None when one is missing or leaves it."""
    for pattern in written.test_data_patterns(data):
        try:
            check_relative(pattern)
        except BundlePathError:
            return None
    real_root, known = os.path.realpath(root), dict[str, str]()
    files: dict[str, Path] = {}
    try:
        for entry in named_files(data, root):
            if entry.rel not in files:
                path = resolve_under(real_root, entry.rel, known)
                if not path.is_file():
                    return None
                files[entry.rel] = path
    except (BundlePathError, OSError):
        return None
    return files
