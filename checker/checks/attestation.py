"""The attestation stages of `checker verify --require-attestation FILE`: the bundle is accepted on a trusted
attestation of a passing verification of exactly its digest, and the comparison is not run again; with
`--rerun` it is, and a comparison whose verdict here differs from the attested one fails the bundle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.signing.attest import AttestationError, verified_statements


def attestation_stage(ctx: Context) -> Iterator[Finding]:
    path, trust = ctx.options.attestation, ctx.options.attestation_trust
    if path is None or trust is None:
        return
    try:
        statements, count = verified_statements(path, trust)
    except AttestationError as exc:
        yield F.error(F.ATTESTATION_UNTRUSTED, str(exc))
        return
    if not statements:
        msg = f"none of the {count} attestations in {path.name} is signed by {trust.whom()}"
        yield F.error(F.ATTESTATION_UNTRUSTED, msg)
        return
    digest = (ctx.digest or "").removeprefix("sha256:")
    mine = [s for s in statements if digest and any(_sha256(x) == digest for x in s.get("subject") or [])]
    if not mine:
        attested = sorted({str(_sha256(x)) for s in statements for x in s.get("subject") or []})
        msg = (
            f"no trusted attestation in {path.name} is about this bundle's digest {ctx.digest} "
            f"(it attests {', '.join(attested)})"
        )
        yield F.error(F.ATTESTATION_SUBJECT, msg, attested=attested, digest=ctx.digest)
        return
    predicate = mine[-1]["predicate"]
    if predicate.get("verificationResult") != "PASSED":
        msg = (
            f"the attestation in {path.name} says this bundle failed its verification ({predicate.get('timeVerified')})"
        )
        yield F.error(F.ATTESTATION_FAILED, msg)
        return
    ctx.attested = predicate
    version = (predicate.get("verifier") or {}).get("version", {}).get("onnx-release-checker")
    again = "run again (--rerun)" if ctx.options.rerun_attested else "not run again"
    msg = (
        f"accepted on the attestation in {path.name}: checker {version} verified digest {ctx.digest} at "
        f"{predicate.get('timeVerified')}; the comparison was {again}"
    )
    yield F.info(F.ATTESTATION_ACCEPTED, msg, policy=predicate.get("policy"))


def rerun_stage(ctx: Context) -> Iterator[Finding]:
    """--rerun: each comparison judged here against the verdict the attestation records for it."""
    if not ctx.options.rerun_attested or ctx.attested is None:
        return
    attested = _host_verdicts(ctx.attested)
    here = {(c.graph, c.against): c.status for c in ctx.comparisons}
    for graph, against in sorted(set(attested) | set(here)):
        then, now = attested.get((graph, against), "absent"), here.get((graph, against), "absent")
        if then != now:
            msg = (
                f"the re-run judged {graph} against {against} '{now}', the attestation records '{then}': "
                "this machine does not reproduce the attested verdict"
            )
            yield F.error(F.ATTESTATION_RERUN_DIFFERS, msg, graph=graph, against=against, attested=then, rerun=now)


def _host_verdicts(predicate: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(graph, against) -> status of the comparisons the attesting machine ran in its own onnxruntime (the first
    runtime listed); those of other --runtime sets are not what a plain re-run judges."""
    runtimes = predicate.get("runtimes") or [{}]
    host = runtimes[0].get("runtime") if isinstance(runtimes[0], dict) else None
    found = {}
    for entry in predicate.get("comparisons") or []:
        if isinstance(entry, dict) and entry.get("runtime") == host:
            found[(str(entry.get("graph")), str(entry.get("against")))] = str(entry.get("status"))
    return found


def _sha256(subject: Any) -> object:
    return (subject.get("digest") or {}).get("sha256") if isinstance(subject, dict) else None
