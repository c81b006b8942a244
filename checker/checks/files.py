"""Paths, existence, digests and unlisted files (bundle.path, bundle.file_missing, bundle.digest, bundle.unlisted)."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.bundle.paths import BundlePathError, check_relative, walk_files, walked_name
from checker.checks.folder import MAX_WALK, folder_state
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.canonical import field_digests, field_keys, is_field
from checker.manifest.load import field_path
from checker.manifest.named import Named, named_files
from checker.manifest.pieces import piece_of
from checker.manifest.schema import SCHEMA_FILE
from checker.readers.digest import EARLIER_DEFINITION, bundle_digest, sha256_files
from checker.readers.digestlist import DIGEST_LIST, DigestList, read_digest_list
from checker.signing.files import SIGNATURE

MAX_UNLISTED_REPORTED = 20


def files_stage(ctx: Context) -> Iterator[Finding]:
    yield from _test_data_globs(ctx)
    named = named_files(ctx.data, ctx.root)
    present: dict[str, Path] = {}
    own = own_files(ctx.root, ctx.manifest.file)
    for entry in named:
        finding = _locate(ctx, entry, present, own)
        if finding:
            yield finding
    ctx.digests = _hash(present, ctx.hashed)
    yield from _declared_digests(ctx, named)
    listed = read_digest_list(ctx.root)
    changed = (yield from _listed_digests(ctx, named, listed)) if listed is not None else []
    yield from _release_digest(ctx, listed, changed)
    names = {walked_name(n.rel) for n in named}  # as the walks spell them
    yield from _unlisted(ctx, names | ({DIGEST_LIST} if listed is not None else set()))
    if not ctx.unusable:  # what else the verdict rests on, recorded with it by a verdict store
        trusted = ctx.options.trust is not None
        ctx.folder = folder_state(ctx.root, ctx.manifest.file, names, ctx.spec.release.digest, trusted=trusted)


def _test_data_globs(ctx: Context) -> Iterator[Finding]:
    """A glob that leaves the bundle is refused like any other path (the cases stage then skips it)."""
    for case in views.cases(ctx.spec):
        pattern = case.onnx_test_data
        if pattern is None:
            continue
        try:
            check_relative(pattern)
        except BundlePathError as exc:
            ctx.unusable.add(pattern)
            keys = (*case.at, "onnx_test_data")
            yield F.error(F.BUNDLE_PATH, f"{field_path(keys)}: {exc}", **ctx.where(*keys))


def written_beside(manifest: str) -> dict[str, str]:
    """The files the checker writes beside a manifest about the bundle, each by what it is: the manifest,
    `checker lock`'s digest list, `checker sign`'s signature and the schema copy `checker init` writes for
    editors. None of them is unlisted, and none is shipped in `release.files`."""
    return {manifest: "manifest", DIGEST_LIST: "digest list", SIGNATURE: "signature", SCHEMA_FILE: "schema copy"}


REWRITTEN = ("manifest", "digest list", "signature")  # rewritten after the named files are hashed


def own_files(root: Path, manifest: str) -> dict[str, str]:
    """The real paths of the files written beside a manifest that lock and sign rewrite -> what each is. A
    named file that is one of them cannot keep a digest: lock and sign rewrite it after hashing it."""
    beside = written_beside(manifest).items()
    return {os.path.realpath(root / name): words for name, words in beside if words in REWRITTEN}


def own_file_problem(rel: str, path: Path, own: dict[str, str]) -> str | None:
    """Why a named file may not be named, when it is the bundle's own manifest, digest list or signature."""
    words = own.get(str(path))
    return f"'{rel}' is the bundle's {words}, which lock and sign rewrite: name another file" if words else None


def _locate(ctx: Context, entry: Named, present: dict[str, Path], own: dict[str, str]) -> Finding | None:
    if entry.rel in present or entry.rel in ctx.unusable:
        return None
    try:
        path = ctx.resolve(entry.rel)
        is_file = path.is_file()
        refused = own_file_problem(entry.rel, path, own)
        if refused is not None:
            raise BundlePathError(refused)
    except (BundlePathError, OSError) as exc:  # OSError: a name the file system refuses (too long, no access)
        ctx.unusable.add(entry.rel)
        _not_present(ctx, entry)
        why = exc if isinstance(exc, BundlePathError) else f"'{entry.rel}' cannot be looked up ({exc.strerror})"
        return F.error(F.BUNDLE_PATH, f"{field_path(entry.keys)}: {why}", **ctx.where(*entry.keys))
    if not is_file:
        ctx.unusable.add(entry.rel)
        _not_present(ctx, entry)
        return F.error(F.FILE_MISSING, f"'{entry.rel}' {_not_a_file(path)}", **ctx.where(*entry.keys), path=entry.rel)
    present[entry.rel] = path
    return None


def _not_present(ctx: Context, entry: Named) -> None:
    """The piece a file that cannot be had belongs to is not present: completeness is a fact about the bundle
    on disk, not about what the manifest declares (labels.txt deleted leaves `labels` unticked)."""
    piece = piece_of(entry.keys)
    # A variant's missing file is the variant's own error: the baseline graph, the piece, is still there.
    if piece is not None and not (entry.keys and entry.keys[0] == "variants"):
        ctx.pieces[piece] = False


def _not_a_file(path: Path) -> str:
    if path.is_dir():
        return "is a folder, not a file"
    if path.exists():
        return "is not a regular file (a FIFO, socket or device)"  # reading one would block or never end
    return "does not exist in the bundle"


def _hash(present: dict[str, Path], hashed: dict[str, str]) -> dict[str, str]:
    """Each present file's sha256: as this verification first read it (`hashed`), else read now and kept there."""
    unread = {rel: path for rel, path in present.items() if rel not in hashed}
    by_path = sha256_files(unread.values())
    hashed.update((rel, by_path[path]) for rel, path in unread.items())
    return {rel: hashed[rel] for rel in present}


def _declared_digests(ctx: Context, named: list[Named]) -> Iterator[Finding]:
    for entry in named:
        actual = ctx.digests.get(entry.rel)
        if entry.sha256 and actual and entry.sha256 != actual:
            keys = (*entry.keys[:-1], "sha256") if entry.keys[-1] == "path" else entry.keys
            msg = f"'{entry.rel}' has sha256 {actual}, but the manifest says {entry.sha256}"
            yield F.error(F.DIGEST, msg, **ctx.where(*keys), path=entry.rel, actual=actual, declared=entry.sha256)


def _listed_digests(ctx: Context, named: list[Named], listed: DigestList) -> Generator[Finding, None, list[str]]:
    """Each named file whose sha256 differs from the digest list's: named, at the manifest line naming it."""
    for problem, line in listed.problems:
        yield F.error(F.DIGEST, problem, DIGEST_LIST, line)
    changed, seen = [], set()
    for entry in named:
        declared = listed.digests.get(entry.rel)
        actual = ctx.digests.get(entry.rel)
        if declared is None or actual is None or entry.rel in seen or declared[0] == actual:
            continue
        seen.add(entry.rel)
        changed.append(entry.rel)
        msg = f"'{entry.rel}' changed: its sha256 is {actual}, but {DIGEST_LIST} line {declared[1]} says {declared[0]}"
        yield F.error(F.DIGEST, msg, **ctx.where(*entry.keys), path=entry.rel, actual=actual, declared=declared[0])
    return changed


def _release_digest(ctx: Context, listed: DigestList | None, changed: list[str]) -> Iterator[Finding]:
    declared = ctx.spec.release.digest
    fields = field_digests(ctx.data)  # the manifest as written: the digest covers its fields, not the typed form
    actual = bundle_digest({**ctx.digests, **fields})
    ctx.digest = actual
    if declared and declared != actual and not ctx.unusable:
        details: dict[str, Any] = {"actual": actual, "declared": declared}
        if declared == bundle_digest(ctx.digests):  # the named files alone: the digest's earlier definition
            msg = (
                f"release.digest {declared} was written by the earlier definition of the bundle digest (the named "
                f"files only, before the manifest's fields were in it); by this checker's it is {actual}, which "
                "`checker lock` writes: the files are as locked, and the manifest's rules are now in the digest too"
            )
            details["definition"] = EARLIER_DEFINITION
            yield F.error(F.DIGEST, msg, **ctx.where("release", "digest"), **details)
            return
        what = _what_changed(ctx, listed, changed, fields)
        msg = f"the bundle digest is {actual}, but release.digest says {declared}: {what}"
        if listed is not None:
            details["fields_changed"] = edited = _fields_changed(listed, fields)
            if edited and what.startswith("manifest fields changed"):  # only the manifest was edited: say so first
                word = "field" if len(edited) == 1 else "fields"
                msg = (
                    f"manifest {word} {_few(edited)} changed since the last lock (the bundle digest is {actual}, "
                    f"release.digest says {declared})"
                )
        yield F.error(F.DIGEST, msg, **ctx.where("release", "digest"), **details)


def _fields_changed(listed: DigestList, fields: dict[str, str]) -> list[str]:
    """The manifest fields (as written: comparison.rules[0].max) added, removed or changed since the lock."""
    old = {name: digest for name, (digest, _) in listed.digests.items() if is_field(name)}
    names = sorted(n for n in set(old) | set(fields) if old.get(n) != fields.get(n))
    return [field_path(field_keys(name)) for name in names]


def _what_changed(ctx: Context, listed: DigestList | None, changed: list[str], fields: dict[str, str]) -> str:
    if listed is None:
        return (
            "a named file or a manifest field changed (run `checker lock` to write "
            f"{DIGEST_LIST}, which lets the checker name it)"
        )
    files = {name for name in listed.digests if not is_field(name)}
    added = sorted(set(ctx.digests) - files)
    removed = sorted(files - set(ctx.digests))
    edited = _fields_changed(listed, fields)
    parts = [f"changed: {_few(changed)}"] if changed else []
    parts += [f"named but not in {DIGEST_LIST}: {_few(added)}"] if added else []
    parts += [f"in {DIGEST_LIST} but no longer named: {_few(removed)}"] if removed else []
    parts += [f"manifest fields changed: {_few(edited)}"] if edited else []
    return "; ".join(parts) or f"the files and fields match {DIGEST_LIST}, which is older than release.digest"


def _few(paths: list[str], shown: int = 5) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(f"'{p}'" for p in paths[:shown]) + more


def _unlisted(ctx: Context, named: set[str]) -> Iterator[Finding]:
    beside = written_beside(ctx.manifest.file)
    unlisted = [rel for rel in walk_files(ctx.root, MAX_WALK) if rel not in named and rel not in beside]
    for rel in unlisted[:MAX_UNLISTED_REPORTED]:
        yield F.warning(F.UNLISTED, f"'{rel}' is in the bundle folder but the manifest does not name it", rel)
    if len(unlisted) > MAX_UNLISTED_REPORTED:
        rest = len(unlisted) - MAX_UNLISTED_REPORTED
        yield F.warning(F.UNLISTED, f"{rest} more files are in the bundle folder without being named")
