"""A bundle's stored verdict looked up and judged before the bundle runs.

The bundle's digest is worked out (`identity.py`) and its key made (`key.py`); the entry of that digest and key
is reused only when it is one signed document that the trusted signer signed, whose subject is this digest,
whose recorded key is the key it is filed under and the key made here, whose run judged every platform the
manifest declares, and whose bundle folder was as it is now: the same list, release.digest and files beside the
named ones, which the digest leaves out and the files stage reads (`checks/folder.py`). Anything else is never
reused: the bundle runs, and a finding says why (`store.refused`, a warning, for an entry of this very key that
cannot be trusted; `store.not_reused`, info, when the store holds this digest under other keys only, or its run
judged less or another folder, naming what differs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.bundle.opening import OpenedBundle, is_archive, open_bundle
from checker.bundle.paths import FILE, BundlePathError, folder_tree, real_under
from checker.checks.completeness import completeness_stage
from checker.checks.folder import MAX_WALK, folder_state, list_digest
from checker.checks.folder import differences as folder_differences
from checker.context import Context, Options
from checker.errors import Error
from checker.findings import Finding
from checker.manifest.canonical import FIELD_START, manifest_digest
from checker.manifest.load import read_text, text_digest
from checker.platforms.catalog import declared_data
from checker.readers.digest import sha256_small
from checker.readers.digestlist import list_bytes
from checker.reports.model import BundleReport, NotRun
from checker.reports.parts.reused import (
    COMPARISON_KEYS,
    PLATFORM_KEYS,
    RUNTIME_KEYS,
    Reused,
    reused_counts,
    reused_facts,
)
from checker.reports.parts.values import mappings
from checker.signing.attest import AttestationError, StatementChecker, Verified
from checker.store.entries import Entry, EntryProblem, Store
from checker.store.identity import Identity, identify
from checker.store.key import Keys, differences, key_of

MAX_OTHERS_READ = 3  # entries of the same digest under other keys read to say what differs
# Words of a manifest that may make what it names or what a verdict must judge depend on more than its text
# (a glob over the bundle's folders, declared platforms): such a manifest is looked up in full.
QUICK_UNSURE = ("onnx_test_data", "platforms")
DIGEST_CHARS, LINE_HEAD = 64, 66  # a list's line: the hex digest, two characters, the path


@dataclass
class Looked:
    """What the store holds for one bundle: its reused report, or why it runs."""

    report: BundleReport | None = None  # the reused verdict; None: the bundle runs
    document: dict[str, Any] | None = None  # the stored signed document, for --attest's file
    parts: dict[str, Any] | None = None  # the bundle's key, when its digest could be worked out before the run
    findings: list[Finding] = field(default_factory=list)  # why a stored verdict was not reused
    hashed: dict[str, str] = field(default_factory=dict)  # the named files as hashed here, for its run to use


class Refused(Exception):
    """An entry that is not reused, and why."""


def look_up(
    path: Path,
    options: Options,
    keys: Keys,
    store: Store,
    checker: StatementChecker,
    read: Listed | None = None,
) -> Looked:
    """The bundle's stored verdict, or why it runs; `read`, its list when already read (`listed`)."""
    try:
        with open_bundle(path) as opened:
            known = quick_look_up(path, opened, options, keys, store, checker, read)
            if known is not None:
                return known
            identity = identify(opened)
            if identity is None:
                return Looked()
            return _look_up(opened, identity, options, keys, store, checker)
    except Error:
        return Looked()  # not a bundle at all: the run says so, as it would without a store


def _look_up(
    opened: OpenedBundle,
    identity: Identity,
    options: Options,
    keys: Keys,
    store: Store,
    checker: StatementChecker,
) -> Looked:
    parts = keys.parts(identity.digest)
    key, digest = key_of(parts), identity.digest.removeprefix("sha256:")
    entry = store.find(digest, key)
    if entry is None:
        return _runs(identity, parts, _others(store, digest, key, parts, checker))
    try:
        verified, document = judge(store, entry, digest, key, checker)
        _judged_declared(identity.data, verified.statement["predicate"])
        _judged_folder(identity, options, verified.statement["predicate"])
    except Refused as why:
        msg = f"the stored verdict {entry.name} was not reused: {why}; the bundle ran again"
        return _runs(identity, parts, [F.warning(F.STORE_REFUSED, msg, entry=entry.name, key=key)])
    except _NotJudged as why:
        msg = f"the stored verdict {entry.name} was not reused: {why}; the bundle ran again"
        return _runs(identity, parts, [F.info(F.STORE_NOT_REUSED, msg, entry=entry.name, key=key)])
    store.used(entry)
    report = reused_report(opened, identity, options, entry, key, verified)
    return Looked(report, document, parts)


def _runs(identity: Identity, parts: dict[str, Any], findings: list[Finding]) -> Looked:
    """A bundle that runs: its key, why, and its named files as hashed here, which its run reads as hashed."""
    return Looked(parts=parts, findings=findings, hashed=identity.files)


def quick_look_up(
    path: Path,
    opened: OpenedBundle,
    options: Options,
    keys: Keys,
    store: Store,
    checker: StatementChecker,
    read: Listed | None = None,
) -> Looked | None:
    """A stored verdict of a bundle whose manifest is the very text judged and whose files are as its
    `bundle.sha256` lists them: found without parsing the manifest, or None (the full look-up then decides).

    The listed lines hash to a digest; an entry of that digest and its key whose signed statement records the
    manifest's text digest is the verdict of this bundle: the same text names the same files and fields, and
    lines that hash to the judged digest are the judged lines (each listed file hashed here matches its line).
    Only where nothing but the text decides what is named: not for an archive, nor for a manifest that could
    name files by a glob (`onnx_test_data`) or declare platforms (the full look-up checks them)."""
    if opened.manifest_path is None or opened.findings or is_archive(path):
        return None
    text, found = read_text(opened.manifest_path)
    if text is None or found or any(word in text for word in QUICK_UNSURE):
        return None
    listing = read or listed(path, keys)
    if listing is None:
        return None
    digest, parts, key = listing.digest, listing.parts, listing.key
    hexdigest = digest.removeprefix("sha256:")
    entry = store.find(hexdigest, key)
    if entry is None:  # before hashing: no file need be read for a verdict the store does not hold
        return None
    files = listing.files()
    if files is None:
        return None
    real_root, known = os.path.realpath(opened.root), dict[str, str]()
    tree = folder_tree(real_root, MAX_WALK)  # the whole folder: its state is judged too
    if tree is None:
        return None
    plain = {name for name, kind in tree if kind == FILE}
    inside = real_root.rstrip(os.sep) + os.sep
    try:
        for name, listed_digest in files:
            file = inside + name if name in plain else real_under(real_root, name, known)
            if sha256_small(file) != listed_digest:
                return None
    except (BundlePathError, OSError):
        return None
    try:
        verified, document = judge(store, entry, hexdigest, key, checker)
    except Refused:
        return None  # the full look-up finds the same entry and says why it is refused
    predicate = verified.statement["predicate"]
    recorded = predicate.get("manifest")
    if not isinstance(recorded, Mapping) or recorded.get("sha256") != text_digest(text):
        return None
    # The text is the one judged, so its release.digest is too; the list is the one read above.
    names, trusted = {name for name, _ in files}, options.trust is not None
    now = folder_state(opened.root, opened.manifest_path.name, names, None, trusted=trusted, tree=tree, listed=digest)
    if folder_differences(predicate.get("folder"), now, same_text=True):
        return None  # the full look-up finds the same and says so
    store.used(entry)
    report = _reused_from_statement(opened.display, opened.manifest_path.name, digest, entry, key, verified)
    return Looked(report, document, parts)


@dataclass(frozen=True)
class Listed:
    """A locked bundle folder's `bundle.sha256` as read, the digest of its text and that digest's key. Read
    once, for the guess of which bundles run (`unstored`) and the quick look-up alike.

    `checker lock` writes the list as the very lines the bundle digest hashes, so the text's SHA-256 is the
    bundle digest it declares; its lines are read only by a look-up that found an entry of that digest (one
    text hashes to it, so those are the judged lines). A list written any other way only has a digest no entry
    is filed under."""

    text: bytes
    digest: str
    parts: dict[str, Any]
    key: str

    def files(self) -> list[tuple[str, str]] | None:
        """The files it lists, (path, sha256), its lines of manifest fields left out; None where it is not UTF-8.
        Read where an entry of the text's digest was found: then the text is lock's (nothing else hashes to a
        bundle digest), each line `<sha256>  <path>`. Any other text only makes a look-up fail: its paths are
        still resolved inside the bundle, and its entry's signature is still checked."""
        try:
            lines = self.text.decode("utf-8").split("\n")
        except UnicodeDecodeError:
            return None
        heads = (line for line in lines if line and not line.startswith(FIELD_START, LINE_HEAD))  # is_field, in place
        return [(line[LINE_HEAD:], line[:DIGEST_CHARS]) for line in heads]


def listed(path: Path, keys: Keys) -> Listed | None:
    """The bundle's list, or None for an archive or a bundle with no list it can read."""
    if is_archive(path):
        return None
    try:
        with open_bundle(path) as opened:
            text = list_bytes(opened.root)
    except (Error, OSError):
        return None
    if text is None:
        return None
    if b"\r" in text:  # as a checkout on Windows may leave it: its lines are the same
        text = text.replace(b"\r\n", b"\n")
    digest = list_digest(text)
    parts = keys.parts(digest)
    return Listed(text, digest, parts, key_of(parts))


def unstored(found: Listed, store: Store) -> bool:
    """Whether the store holds no entry of the listed digest under its key: a bundle that will almost surely
    run, found without hashing a file or checking a signature, so that its run can start before the other
    bundles are looked up. Only a guess of which to look up first: the look-up itself decides, and a list that
    does not match the files only makes the guess wrong."""
    return store.find(found.digest.removeprefix("sha256:"), found.key) is None


def judge(
    store: Store, entry: Entry, digest: str, key: str, checker: StatementChecker
) -> tuple[Verified, dict[str, Any]]:
    """The entry's verified statement and its signed document; Refused when it cannot be relied on."""
    try:
        text = store.read(entry)
    except EntryProblem as exc:
        raise Refused(str(exc)) from None
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise Refused(f"it holds {len(lines)} lines, not one signed attestation")
    try:
        verified = checker.verified(lines[0])
    except AttestationError as exc:
        raise Refused(str(exc)) from None
    if verified is None:
        raise Refused(f"it is not an attestation signed by {checker.trust.whom()}")
    statement = verified.statement
    subjects = [s.get("digest", {}).get("sha256") for s in mappings(statement.get("subject"))]
    if subjects != [digest]:
        raise Refused(f"its subject is another digest ({', '.join(map(str, subjects)) or 'none'}), not sha256:{digest}")
    predicate = statement.get("predicate")
    if not isinstance(predicate, Mapping):
        raise Refused("it records no verdict")
    reuse = predicate.get("reuse")
    recorded = reuse.get("parts") if isinstance(reuse, Mapping) else None
    if not isinstance(reuse, Mapping) or not isinstance(recorded, Mapping):
        raise Refused("it records no key (an attestation written without a verdict store's key)")
    if reuse.get("key") != key or key_of(recorded) != key:
        raise Refused("the key it records is not the key it is filed under")
    if predicate.get("verificationResult") not in ("PASSED", "FAILED"):
        raise Refused("it records no verdict")
    _consistent(predicate)
    return verified, verified.document


def _consistent(predicate: Mapping[str, Any]) -> None:
    """A pass under --strict has no check left undone and no warning: one that says otherwise is not the
    checker's."""
    if predicate.get("verificationResult") != "PASSED" or predicate.get("strict") is not True:
        return
    counts = predicate.get("findings")
    warnings = counts.get("warning") if isinstance(counts, Mapping) else None
    if predicate.get("notRun") or (isinstance(warnings, Mapping) and any(warnings.values())):
        raise Refused("it records a pass under --strict with checks not run or warnings, which --strict fails")


class _NotJudged(Exception):
    """A trusted entry whose run did not judge what this bundle asks for."""


def _judged_declared(data: Mapping[str, Any], predicate: Mapping[str, Any]) -> None:
    wanted = declared_data(data.get("runtime"))
    if not wanted:
        return
    judged = {str(p.get("class")) for p in mappings(predicate.get("platforms"))}
    missing = [f"{p.name} ({p.cpu_class})" for p in wanted if p.cpu_class not in judged]
    if missing:
        raise _NotJudged(f"its run did not judge {', '.join(missing)}, which runtime.platforms declares")


def _judged_folder(identity: Identity, options: Options, predicate: Mapping[str, Any]) -> None:
    """The folder as its verdict was judged: the same list, release.digest and files beside the named ones."""
    release = identity.data.get("release")
    found = release.get("digest") if isinstance(release, dict) else None
    declared, trusted = found if isinstance(found, str) else None, options.trust is not None
    now = folder_state(identity.root, identity.manifest.file, identity.files, declared, trusted=trusted)
    changed = folder_differences(predicate.get("folder"), now)
    if changed:
        raise _NotJudged(f"the bundle folder is not as it was judged: {'; '.join(changed)}")


def _others(store: Store, digest: str, key: str, parts: dict[str, Any], checker: StatementChecker) -> list[Finding]:
    """store.not_reused when the store holds this digest under other keys: what differs from the first one
    that can be trusted."""
    others = store.others(digest, key)
    if not others:
        return []
    for entry in others[:MAX_OTHERS_READ]:
        try:
            verified, _ = judge(store, entry, digest, entry.key, checker)
        except Refused:
            continue
        recorded = verified.statement["predicate"]["reuse"]["parts"]
        what = "; ".join(differences(parts, recorded)[:6]) or "its parts"
        msg = (
            f"the store holds a verdict of this bundle's digest under another key ({entry.name}), so it was not "
            f"reused: {what}; the bundle ran again"
        )
        return [F.info(F.STORE_NOT_REUSED, msg, entry=entry.name, key=key, other_key=entry.key)]
    noun = "entry" if len(others) == 1 else "entries"
    msg = (
        f"the store holds {len(others)} {noun} of this bundle's digest under other keys, none of them signed by "
        f"{checker.trust.whom()}; the bundle ran again"
    )
    return [F.info(F.STORE_NOT_REUSED, msg, key=key)]


def reused_report(
    opened: OpenedBundle, identity: Identity, options: Options, entry: Entry, key: str, verified: Verified
) -> BundleReport:
    """The bundle's report from its stored verdict, its identity from here (and its pieces, where the
    attestation does not record them)."""
    report = _reused_from_statement(opened.display, identity.manifest.file, identity.digest, entry, key, verified)
    found = identity.data.get("release")
    release: dict[str, Any] = found if isinstance(found, dict) else {}
    report.name, report.version = _text(release.get("name")), _text(release.get("version"))
    report.manifest_digest = manifest_digest(identity.data)
    report.manifest_sha256 = identity.manifest.text_sha256
    if not report.pieces:
        ctx = Context(identity.root, identity.manifest, options)
        report.findings[:0] = list(completeness_stage(ctx))
        report.pieces = dict(ctx.pieces)
    return report


def _reused_from_statement(
    display: str, manifest_file: str, digest: str, entry: Entry, key: str, verified: Verified
) -> BundleReport:
    """A reused bundle's report as the attestation words it: the release, the manifest's digest and the pieces
    judged, the verdict (store.reused, an error when it failed), the checks not run and what the run cost."""
    predicate = verified.statement["predicate"]
    reused = reused_record(entry, key, verified)
    make = F.error if not reused.passed else F.info
    found = predicate.get("release")
    release: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    manifest = predicate.get("manifest")
    pieces = predicate.get("pieces")
    return BundleReport(
        path=display,
        manifest_file=manifest_file,
        name=_text(release.get("name")),
        version=_text(release.get("version")),
        digest=digest,
        manifest_digest=_text(manifest.get("digest")) if isinstance(manifest, Mapping) else None,
        manifest_sha256=_text(manifest.get("sha256")) if isinstance(manifest, Mapping) else None,
        pieces={str(p): v == "present" for p, v in pieces.items()} if isinstance(pieces, Mapping) else {},
        findings=[make(F.STORE_REUSED, reused.line(), entry=entry.name, key=key)],
        not_run=[NotRun(str(n.get("check")), str(n.get("reason"))) for n in mappings(predicate.get("notRun"))],
        reused=reused,
        duration_s=float(cost) if isinstance(cost := predicate.get("durationSeconds"), (int, float)) else None,
    )


def reused_record(entry: Entry, key: str, verified: Verified) -> Reused:
    """The report's `reused`: the entry, date, signer, verdict and the figures the attestation holds, each
    read as the report's schema has it."""
    predicate = verified.statement["predicate"]
    verifier = predicate.get("verifier")
    version = verifier.get("version") if isinstance(verifier, Mapping) else None
    return Reused(
        entry=entry.name,
        key=key,
        verified_at=str(predicate.get("timeVerified")),
        signed_by=verified.signer,
        result=str(predicate.get("verificationResult")),
        checker_version=str(version.get("onnx-release-checker") if isinstance(version, Mapping) else ""),
        strict=predicate.get("strict") is True,
        runtimes=reused_facts(predicate.get("runtimes"), RUNTIME_KEYS),
        comparisons=reused_facts(predicate.get("comparisons"), COMPARISON_KEYS),
        platforms=reused_facts(predicate.get("platforms"), PLATFORM_KEYS),
        findings=reused_counts(predicate.get("findings")),
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)
