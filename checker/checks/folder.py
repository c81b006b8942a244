"""What a bundle's verdict rests on besides its digest: the folder around the named files.

The bundle digest covers every named file's content and every manifest field, but the stages also read what it
leaves out: `bundle.sha256` (a line that no longer matches is an error), `release.digest` (left out of the digest
it declares), the files nobody names (each a `bundle.unlisted` warning), the folders a test-data glob matches, a
named file that is a link (a signature refuses it), and `bundle.sig` (which the stale-signature check compares,
and which under --require-signature signs every file of the folder). A stored verdict is the verdict of its
folder only when all of these are as they were judged: the verdict store records this state with each verdict
and reuses one only for a folder in the same state.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Collection
from pathlib import Path
from typing import Any

from checker.bundle.paths import FILE, FOLDER, LINK, OTHER, folder_tree, walked_name
from checker.readers.digest import sha256_small
from checker.readers.digestlist import DIGEST_LIST, list_bytes
from checker.signing.files import SIGNATURE

MAX_WALK = 50_000  # files a bundle folder is walked for (the files stage's unlisted files, and this state)
# The state's fields, in the words a refusal uses.
WORDS = {
    "list": DIGEST_LIST,
    "release_digest": "release.digest",
    "others": "the folder's other entries (files not named, folders, links)",
}


def folder_state(
    root: Path,
    manifest: str,
    named: Collection[str],
    release_digest: str | None,
    *,
    trusted: bool,
    tree: list[tuple[str, str]] | None = None,
    listed: str | bool | None = False,
) -> dict[str, Any] | None:
    """{list: the digest list's SHA-256 (None without one), release_digest: as declared, others: the SHA-256 of
    every entry of the folder but the named regular files (see `_entries`), count: how many}. None where the
    state cannot be told exactly: a list that is not a plain readable file, a folder that cannot be listed or
    holds more than MAX_WALK entries, a file whose content counts that cannot be read. `trusted`: the run
    requires a signature (--require-signature); `tree` (folder_tree of the root) and `listed` (the list's
    digest), where the caller has them already."""
    if listed is False:
        listed = _list_digest(root)
    if listed is False:
        return None
    tree = folder_tree(os.fspath(root), MAX_WALK) if tree is None else tree
    if tree is None:
        return None
    try:
        entries = _entries(root, tree, {walked_name(rel) for rel in named}, manifest, trusted)
    except OSError:
        return None
    text = json.dumps(entries, separators=(",", ":")).encode()
    return {
        "list": listed if isinstance(listed, str) else None,
        "release_digest": release_digest,
        "others": "sha256:" + hashlib.sha256(text).hexdigest(),
        "count": len(entries),
    }


def _entries(root: Path, tree: list[tuple[str, str]], named: set[str], manifest: str, trusted: bool) -> list[Any]:
    """Each entry but a named regular file (the digest holds its content), sorted: its name and kind; for a
    link, its target and what it leads to (`_through`); for a file, its content where a signature check reads
    it (`_read`)."""
    others = {name for name, kind in tree if kind in (FILE, LINK) and name not in named}
    read = _read(others, manifest, trusted)
    real_root = os.path.realpath(root)
    out: list[Any] = []
    for name, kind in sorted(tree):
        path = os.path.join(root, name)  # noqa: PTH118 (an entry of every bundle of a zoo)
        if kind == LINK:
            out.append([name, kind, os.fspath(Path(path).readlink()), *_through(path, real_root, name in read)])
        elif kind == FILE and name not in named:
            out.append([name, kind, sha256_small(path) if name in read else None])
        elif kind != FILE:
            out.append([name, kind])
    return out


def _through(path: str, real_root: str, read: bool) -> list[Any]:
    """What a link leads to: whether inside the bundle, what kind of entry (none: a broken link or a loop), and
    its content where a signature check reads it through the link (only inside the bundle: nothing outside it
    is read; that the link leaves it, and whether something is there, is what a stage can tell)."""
    real = os.path.realpath(path)
    inside = real.startswith(real_root.rstrip(os.sep) + os.sep)
    try:
        mode = Path(real).stat().st_mode
    except OSError:
        return [inside, None, None]
    kind = FILE if stat.S_ISREG(mode) else FOLDER if stat.S_ISDIR(mode) else OTHER
    return [inside, kind, sha256_small(real) if read and inside and kind == FILE else None]


def _read(others: set[str], manifest: str, trusted: bool) -> set[str]:
    """The files not named whose contents a stage reads, besides their names: none without a signature; with
    one, the signature, the manifest and the list (the stale-signature check compares them with what was
    signed), and under --require-signature every file (the signature covers the whole folder)."""
    if SIGNATURE not in others:
        return set()
    if trusted:
        return others
    return others & {SIGNATURE, manifest, DIGEST_LIST}


def list_digest(text: bytes) -> str:
    """The digest of a list's bytes as the files stage reads its lines (a Windows line end is a line end): what
    a folder state records, and, for a list `checker lock` wrote, the bundle digest it declares."""
    if b"\r" in text:
        text = text.replace(b"\r\n", b"\n")
    return "sha256:" + hashlib.sha256(text).hexdigest()


def _list_digest(root: Path) -> str | bool | None:
    """The list's digest, None when there is none, False when it is no plain file that can be read."""
    text = list_bytes(root)
    if text is not None:
        return list_digest(text)
    return False if os.path.lexists(os.path.join(root, DIGEST_LIST)) else None  # noqa: PTH118


def differences(recorded: object, now: dict[str, Any] | None, same_text: bool = False) -> list[str]:
    """What differs between the state a verdict recorded and the folder's now, in words (a reason when either
    is unknown). With `same_text` (the manifest's text is the one judged) its `release.digest` is too."""
    if not isinstance(recorded, dict):
        return ["the verdict records no state of the bundle folder"]
    if now is None:
        return ["the state of the bundle folder cannot be told exactly here"]
    fields = [f for f in WORDS if not (same_text and f == "release_digest")]
    changed = [f for f in fields if recorded.get(f) != now.get(f)]
    if "others" not in changed and recorded.get("count") != now.get("count"):
        changed.append("others")
    return [f"{WORDS[f]} changed" for f in changed]
