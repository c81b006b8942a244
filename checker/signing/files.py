"""Which files a signature covers: the release as `checker pack` ships it (the manifest, `bundle.sha256` and
every named file). Anything else in the folder is left out by name, so the signature holds for the folder and
for its packed archive alike."""

from __future__ import annotations

from pathlib import Path

from checker.bundle.paths import walked_name
from checker.manifest.load import load_manifest
from checker.manifest.named import named_files
from checker.readers.digestlist import DIGEST_LIST

SIGNATURE = "bundle.sig"
# model-signing leaves these out unless told otherwise; the checker's own walk does the same.
GIT_PATHS = (".git", ".gitattributes", ".github", ".gitignore")
MAX_WALK = 50_000


def release_files(manifest_path: Path) -> list[str]:
    """The manifest, the digest list when present, and every named file, bundle-relative and sorted."""
    manifest, _ = load_manifest(manifest_path)
    root = manifest_path.parent
    named = {walked_name(entry.rel) for entry in named_files(manifest.data, root)} if manifest is not None else set()
    beside = {manifest_path.name} | ({DIGEST_LIST} if (root / DIGEST_LIST).is_file() else set())
    return sorted(named | beside)


def is_git_path(rel: str) -> bool:
    head = rel.split("/", 1)[0]
    return head in GIT_PATHS
