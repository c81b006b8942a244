"""A bundle's stored verdict looked up and judged before the bundle runs.

The bundle's digest is worked out (`identity.py`) and its key made (`key.py`); the entry of that digest and key
is reused only when it is one signed document that the trusted signer signed, whose subject is this digest,
whose recorded key is the key it is filed under and the key made here, and whose run judged every platform the
manifest declares. Anything else is never reused: the bundle runs, and a finding says why (`store.refused`, a
warning, for an entry of this very key that cannot be trusted; `store.not_reused`, info, when the store holds
this digest under other keys only, naming what differs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.bundle.opening import OpenedBundle, open_bundle
from checker.checks.completeness import completeness_stage
from checker.context import Context, Options
from checker.errors import Error
from checker.findings import Finding
from checker.manifest.canonical import manifest_digest
from checker.platforms.catalog import declared
from checker.reports.model import BundleReport, NotRun, mappings, reused_line
from checker.signing.attest import AttestationError, StatementChecker, Verified
from checker.store.entries import Entry, EntryProblem, Store
from checker.store.identity import Identity, identify
from checker.store.key import Machine, differences, key_of, key_parts

MAX_OTHERS_READ = 3  # entries of the same digest under other keys read to say what differs


@dataclass
class Looked:
    """What the store holds for one bundle: its reused report, or why it runs."""

    report: BundleReport | None = None  # the reused verdict; None: the bundle runs
    document: dict[str, Any] | None = None  # the stored signed document, for --attest's file
    parts: dict[str, Any] | None = None  # the bundle's key, when its digest could be worked out before the run
    findings: list[Finding] = field(default_factory=list)  # why a stored verdict was not reused


class Refused(Exception):
    """An entry that is not reused, and why."""


def look_up(path: Path, options: Options, machine: Machine, store: Store, checker: StatementChecker) -> Looked:
    try:
        with open_bundle(path) as opened:
            identity = identify(opened)
            if identity is None:
                return Looked()
            return _look_up(opened, identity, options, machine, store, checker)
    except Error:
        return Looked()  # not a bundle at all: the run says so, as it would without a store


def _look_up(
    opened: OpenedBundle,
    identity: Identity,
    options: Options,
    machine: Machine,
    store: Store,
    checker: StatementChecker,
) -> Looked:
    parts = key_parts(identity.digest, machine, options)
    key, digest = key_of(parts), identity.digest.removeprefix("sha256:")
    entry = store.find(digest, key)
    if entry is None:
        return Looked(parts=parts, findings=_others(store, digest, key, parts, checker))
    try:
        verified, document = judge(store, entry, digest, key, checker)
        _judged_declared(identity.data, verified.statement["predicate"])
    except Refused as why:
        msg = f"the stored verdict {entry.name} was not reused: {why}; the bundle ran again"
        return Looked(parts=parts, findings=[F.warning(F.STORE_REFUSED, msg, entry=entry.name, key=key)])
    except _NotJudged as why:
        msg = f"the stored verdict {entry.name} was not reused: {why}; the bundle ran again"
        return Looked(parts=parts, findings=[F.info(F.STORE_NOT_REUSED, msg, entry=entry.name, key=key)])
    store.used(entry)
    report = reused_report(opened, identity, options, entry, key, verified)
    return Looked(report, document, parts)


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
    return verified, json.loads(lines[0])


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
    wanted = declared(data.get("runtime") or {})
    if not wanted:
        return
    judged = {str(p.get("class")) for p in mappings(predicate.get("platforms"))}
    missing = [f"{p.name} ({p.cpu_class})" for p in wanted if p.cpu_class not in judged]
    if missing:
        raise _NotJudged(f"its run did not judge {', '.join(missing)}, which runtime.platforms declares")


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
    """The bundle's report from its stored verdict: its identity and completeness from here, its verdict and
    figures from the attestation."""
    predicate = verified.statement["predicate"]
    reused = reused_record(entry, key, verified)
    ctx = Context(identity.root, identity.manifest, options)
    findings = list(completeness_stage(ctx))
    failed = reused["result"] != "PASSED"
    make = F.error if failed else F.info
    findings.append(make(F.STORE_REUSED, reused_line(reused), entry=entry.name, key=key))
    found = identity.data.get("release")
    release: dict[str, Any] = found if isinstance(found, dict) else {}
    return BundleReport(
        path=opened.display,
        manifest_file=identity.manifest.file,
        name=_text(release.get("name")),
        version=_text(release.get("version")),
        digest=identity.digest,
        manifest_digest=manifest_digest(identity.data),
        pieces=dict(ctx.pieces),
        findings=findings,
        not_run=[NotRun(str(n.get("check")), str(n.get("reason"))) for n in mappings(predicate.get("notRun"))],
        reused=reused,
        duration_s=float(cost) if isinstance(cost := predicate.get("durationSeconds"), (int, float)) else None,
    )


def reused_record(entry: Entry, key: str, verified: Verified) -> dict[str, Any]:
    """The report's `reused`: the entry, date, signer, verdict and the figures the attestation holds, each
    read as the report's schema has it."""
    predicate = verified.statement["predicate"]
    verifier = predicate.get("verifier")
    version = verifier.get("version") if isinstance(verifier, Mapping) else None
    found = predicate.get("findings")
    counts: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return {
        "entry": entry.name,
        "key": key,
        "verified_at": str(predicate.get("timeVerified")),
        "signed_by": verified.signer,
        "result": str(predicate.get("verificationResult")),
        "checker_version": str(version.get("onnx-release-checker") if isinstance(version, Mapping) else ""),
        "strict": predicate.get("strict") is True,
        "runtimes": [_strings(r, ("runtime", "platform")) for r in mappings(predicate.get("runtimes"))],
        "comparisons": [
            _strings(c, ("graph", "against", "status", "runtime")) for c in mappings(predicate.get("comparisons"))
        ],
        "platforms": [_strings(p, ("name", "class", "how")) for p in mappings(predicate.get("platforms"))],
        "findings": {
            str(severity): {str(k): n for k, n in ids.items() if isinstance(n, int) and n >= 0}
            for severity, ids in counts.items()
            if isinstance(ids, Mapping)
        },
    }


def _strings(item: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, str | None]:
    return {k: (None if item.get(k) is None else str(item.get(k))) for k in keys}


def _text(value: object) -> str | None:
    return None if value is None else str(value)
