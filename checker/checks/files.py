"""Paths, existence, digests and unlisted files (bundle.path, bundle.file_missing, bundle.digest, bundle.unlisted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from checker import findings as F
from checker.bundle.paths import BundlePathError, resolve_inside, walk_files
from checker.context import Context
from checker.findings import Finding
from checker.manifest.load import field_path
from checker.manifest.named import Named, named_files
from checker.readers.digest import bundle_digest, sha256_files

MAX_UNLISTED_REPORTED = 20
MAX_WALK = 50_000


def files_stage(ctx: Context) -> Iterator[Finding]:
    named = named_files(ctx.data, ctx.root)
    present: dict[str, Path] = {}
    for entry in named:
        finding = _locate(ctx, entry, present)
        if finding:
            yield finding
    ctx.digests = {rel: digest for rel, digest in _hash(present).items()}
    yield from _declared_digests(ctx, named)
    yield from _release_digest(ctx)
    yield from _unlisted(ctx, {n.rel for n in named})


def _locate(ctx: Context, entry: Named, present: dict[str, Path]) -> Finding | None:
    if entry.rel in present or entry.rel in ctx.unusable:
        return None
    try:
        path = resolve_inside(ctx.root, entry.rel)
        is_file = path.is_file()
    except (BundlePathError, OSError) as exc:  # OSError: a name the file system refuses (too long, no access)
        ctx.unusable.add(entry.rel)
        why = exc if isinstance(exc, BundlePathError) else f"'{entry.rel}' cannot be looked up ({exc.strerror})"
        return F.error(F.BUNDLE_PATH, f"{field_path(entry.keys)}: {why}", **ctx.where(*entry.keys))
    if not is_file:
        ctx.unusable.add(entry.rel)
        return F.error(F.FILE_MISSING, f"'{entry.rel}' {_not_a_file(path)}", **ctx.where(*entry.keys), path=entry.rel)
    present[entry.rel] = path
    return None


def _not_a_file(path: Path) -> str:
    if path.is_dir():
        return "is a folder, not a file"
    if path.exists():
        return "is not a regular file (a FIFO, socket or device)"  # reading one would block or never end
    return "does not exist in the bundle"


def _hash(present: dict[str, Path]) -> dict[str, str]:
    by_path = sha256_files(present.values())
    return {rel: by_path[path] for rel, path in present.items()}


def _declared_digests(ctx: Context, named: list[Named]) -> Iterator[Finding]:
    for entry in named:
        actual = ctx.digests.get(entry.rel)
        if entry.sha256 and actual and entry.sha256 != actual:
            keys = (*entry.keys[:-1], "sha256") if entry.keys[-1] == "path" else entry.keys
            msg = f"'{entry.rel}' has sha256 {actual}, but the manifest says {entry.sha256}"
            yield F.error(F.DIGEST, msg, **ctx.where(*keys), path=entry.rel, actual=actual, declared=entry.sha256)


def _release_digest(ctx: Context) -> Iterator[Finding]:
    declared = (ctx.data.get("release") or {}).get("digest")
    actual = bundle_digest(ctx.digests)
    ctx.digest = actual
    if declared and declared != actual and not ctx.unusable:
        msg = f"the bundle digest is {actual}, but release.digest says {declared}: a named file changed"
        yield F.error(F.DIGEST, msg, **ctx.where("release", "digest"), actual=actual, declared=declared)


def _unlisted(ctx: Context, named: set[str]) -> Iterator[Finding]:
    unlisted = [rel for rel in walk_files(ctx.root, MAX_WALK) if rel not in named and rel != ctx.manifest.file]
    for rel in unlisted[:MAX_UNLISTED_REPORTED]:
        yield F.warning(F.UNLISTED, f"'{rel}' is in the bundle folder but the manifest does not name it", rel)
    if len(unlisted) > MAX_UNLISTED_REPORTED:
        rest = len(unlisted) - MAX_UNLISTED_REPORTED
        yield F.warning(F.UNLISTED, f"{rest} more files are in the bundle folder without being named")
