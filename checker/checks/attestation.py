"""The attestation stage of `checker verify --require-attestation FILE`: the bundle is accepted on a trusted
attestation of a passing verification of exactly its digest, and the comparison is not run again."""

from __future__ import annotations

from collections.abc import Iterator

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.signing.attest import AttestationError, load_public_key, verified_statements


def attestation_stage(ctx: Context) -> Iterator[Finding]:
    path, key = ctx.options.attestation, ctx.options.attestation_key
    if path is None or key is None:
        return
    try:
        statements, count = verified_statements(path, load_public_key(key))
    except AttestationError as exc:
        yield F.error(F.ATTESTATION_UNTRUSTED, str(exc))
        return
    if not statements:
        msg = f"none of the {count} attestations in {path.name} is signed by the key {key.name}"
        yield F.error(F.ATTESTATION_UNTRUSTED, msg)
        return
    digest = (ctx.digest or "").removeprefix("sha256:")
    mine = [s for s in statements if digest and any(x.get("digest", {}).get("sha256") == digest for x in s["subject"])]
    if not mine:
        attested = sorted({str(x.get("digest", {}).get("sha256")) for s in statements for x in s.get("subject") or []})
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
    version = (predicate.get("verifier") or {}).get("version", {}).get("onnx-release-checker")
    msg = (
        f"accepted on the attestation in {path.name}: checker {version} verified digest {ctx.digest} at "
        f"{predicate.get('timeVerified')}; the comparison was not run again"
    )
    yield F.info(F.ATTESTATION_ACCEPTED, msg, policy=predicate.get("policy"))
