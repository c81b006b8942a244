"""The attestation stages of `checker verify --require-attestation FILE`: the bundle is accepted on a trusted
attestation of a passing verification of exactly its digest, and the comparison is not run again; with
`--rerun` it is, and a comparison whose verdict here differs from the attested one fails the bundle.

An attestation is accepted only for what its run judged: one whose run did not judge a platform the manifest
declares (`runtime.platforms`) is refused, and under --strict so is one whose run left a check not run or passed
with warnings that --strict fails (what the attesting run's options let through, this run's do not)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.platforms.catalog import declared
from checker.readers.digest import bundle_digest
from checker.reports.model import NotRun, not_run_line
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
        yield _other_subject(ctx, path.name, statements)
        return
    predicate = mine[-1]["predicate"]
    if predicate.get("verificationResult") != "PASSED":
        msg = (
            f"the attestation in {path.name} says this bundle failed its verification ({predicate.get('timeVerified')})"
        )
        yield F.error(F.ATTESTATION_FAILED, msg)
        return
    refused = [*_platforms_not_judged(ctx, path.name, predicate), *_strict_refusal(ctx, path.name, predicate)]
    if refused:
        yield from refused
        return
    ctx.attested = predicate
    attested_not_run = [NotRun.from_dict(n) for n in _list(predicate.get("notRun")) if _is_not_run(n)]
    # What the attesting run did not check was not checked here either: the verdict line says so.
    ctx.not_run += [NotRun(f"attested: {n.check}", n.reason) for n in attested_not_run]
    version = (predicate.get("verifier") or {}).get("version", {}).get("onnx-release-checker")
    again = "run again (--rerun)" if ctx.options.rerun_attested else "not run again"
    left = not_run_line(attested_not_run)
    msg = (
        f"accepted on the attestation in {path.name}: checker {version} verified digest {ctx.digest} at "
        f"{predicate.get('timeVerified')}; the comparison was {again}"
        + (f"; the attested run left {left}" if left else "")
    )
    yield F.info(F.ATTESTATION_ACCEPTED, msg, policy=predicate.get("policy"))


def _other_subject(ctx: Context, name: str, statements: list[dict[str, Any]]) -> Finding:
    """attestation.subject: the attested digests, and whether one is this bundle's by the digest's earlier
    definition (the named files only, before the manifest's fields were in it)."""
    attested = sorted({str(_sha256(x)) for s in statements for x in s.get("subject") or []})
    earlier = bundle_digest(ctx.digests).removeprefix("sha256:") if ctx.digests else None
    msg = (
        f"no trusted attestation in {name} is about this bundle's digest {ctx.digest} "
        f"(it attests {', '.join(attested)})"
    )
    if earlier in attested:
        msg += (
            f"; sha256:{earlier} is this bundle's digest by the earlier definition of the bundle digest (the named "
            "files only, which left the manifest's fields out), so the attestation does not vouch for its rules: "
            "attest it again with this checker"
        )
    return F.error(
        F.ATTESTATION_SUBJECT, msg, attested=attested, digest=ctx.digest, earlier_definition=earlier in attested
    )


def _platforms_not_judged(ctx: Context, name: str, predicate: Mapping[str, Any]) -> Iterator[Finding]:
    """An attestation is of the platforms its run judged: each platform the manifest declares must be one."""
    wanted = declared(ctx.spec.runtime)
    if not wanted:
        return
    recorded = predicate.get("platforms")
    if not isinstance(recorded, list):
        msg = (
            f"the attestation in {name} does not say which platforms its run judged (it was made by an earlier "
            f"checker), and runtime.platforms declares {', '.join(p.name for p in wanted)}"
        )
        yield F.error(F.ATTESTATION_PLATFORMS, msg, **ctx.where("runtime", "platforms"))
        return
    judged = {str(p.get("class")) for p in recorded if isinstance(p, Mapping)}
    missing = [p for p in wanted if p.cpu_class not in judged]
    if missing:
        shown = ", ".join(f"{p.name} ({p.cpu_class})" for p in missing)
        msg = (
            f"the attestation in {name} is of a run that did not judge {shown}, which runtime.platforms declares "
            f"(it judged {', '.join(sorted(judged)) or 'no platform'})"
        )
        yield F.error(
            F.ATTESTATION_PLATFORMS, msg, **ctx.where("runtime", "platforms"), missing=[p.name for p in missing]
        )


def _strict_refusal(ctx: Context, name: str, predicate: Mapping[str, Any]) -> Iterator[Finding]:
    """Under --strict, an attested pass that --strict would have failed: checks not run, or warnings the
    attesting run let through."""
    if not ctx.options.strict:
        return
    not_run, counts = predicate.get("notRun"), predicate.get("findings")
    if not isinstance(not_run, list) or not isinstance(counts, Mapping) or "strict" not in predicate:
        msg = (
            f"the attestation in {name} does not record the checks its run left undone or the warnings it passed "
            "with (it was made by an earlier checker), so --strict cannot rely on it"
        )
        yield F.error(F.ATTESTATION_STRICT, msg)
        return
    warnings = counts.get("warning")
    warned = sum(int(n) for n in warnings.values() if isinstance(n, int)) if isinstance(warnings, Mapping) else 0
    why = []
    if not_run:
        why.append(not_run_line([NotRun.from_dict(n) for n in not_run if isinstance(n, Mapping)]))
    if warned and predicate.get("strict") is not True:
        ids = ", ".join(sorted(str(k) for k in warnings)) if isinstance(warnings, Mapping) else ""
        why.append(f"{warned} warning{'s' if warned != 1 else ''} ({ids}) that its run, without --strict, passed")
    if why:
        msg = f"the attestation in {name} is of a pass that --strict fails: {'; '.join(why)}"
        yield F.error(F.ATTESTATION_STRICT, msg, not_run=len(not_run), warnings=warned)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_not_run(value: object) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("check"), str) and isinstance(value.get("reason"), str)


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
