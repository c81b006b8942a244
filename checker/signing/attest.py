"""The verdict as an attestation: an in-toto Statement about the bundle digest whose predicate is a
verification summary (SLSA's Verification Summary Attestation, with the checker's figures added), signed in a
DSSE envelope with the publisher's elliptic-curve key, alone or with its certificate chain (`dsse.py`).

`checker verify --attest OUT` writes one envelope per bundle, one a line (in-toto's `.intoto.jsonl`);
`checker verify --require-attestation FILE` accepts a bundle when a trusted envelope in FILE attests a passing
verification of exactly its digest, without running the comparison again (or, with --rerun, runs it again and
fails when its verdict differs from the attested one).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.errors import UsageError
from checker.manifest.canonical import canonical_json
from checker.readers.digest import DIGEST_DEFINITION
from checker.signing.keyless import KeylessError, KeylessSigner, KeylessVerifier, is_sigstore_bundle, sign_keyless

if TYPE_CHECKING:
    from checker.context import Trust
    from checker.signing.dsse import EnvelopeSigner

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1"
VERIFIER_ID = "https://github.com/onnx-release-checker/onnx-release-checker"
MAX_ATTESTATION_BYTES = 16 << 20


class AttestationError(Exception):
    """An envelope that does not verify or is not what the checker writes."""


@dataclass(frozen=True)
class Circumstances:
    """What a statement records beyond the bundle's report: the CPU class of the machine whose own onnxruntime
    judged it, and the key a verdict store files the verdict under (`checker.store.key`), both worked out by the
    command that attests."""

    cpu_class: str | None = None
    reuse: Mapping[str, Any] | None = None  # {"key": hex, "parts": the key's parts}


def policy_digest(bundle: Mapping[str, Any]) -> str:
    """sha256 of the rules judged, as canonical JSON: each comparison's graph, reference and rules with their
    parameters and pass rates."""
    rules = [
        {
            "graph": c.get("graph"),
            "against": c.get("against"),
            "rules": [
                {k: r.get(k) for k in ("output", "check", "params", "min_pass_rate")} for r in c.get("rules") or []
            ],
        }
        for c in bundle.get("comparisons") or []
    ]
    return hashlib.sha256(canonical_json(rules).encode("utf-8")).hexdigest()


def _results(comparisons: Any, runtime: object) -> list[dict[str, Any]]:
    keys = ("graph", "against", "status")
    return [{**{k: c.get(k) for k in keys}, "runtime": runtime} for c in comparisons or []]


def judged_platforms(bundle: Mapping[str, Any], cpu_class: str | None) -> list[dict[str, Any]]:
    """The CPU classes the verdict was judged on: this machine's own (the bundle's `comparisons`), then each
    --platform set that judged (a platform that could not run is in `not_run`, not here)."""
    found: list[dict[str, Any]] = [{"name": "host", "class": cpu_class, "how": "native"}] if cpu_class else []
    for entry in bundle.get("runtimes") or []:
        platform = entry.get("platform") if isinstance(entry, Mapping) else None
        if isinstance(platform, Mapping) and entry.get("comparisons") and not entry.get("error"):
            found.append({"name": platform.get("name"), "class": platform.get("class"), "how": platform.get("how")})
    return found


def finding_counts(bundle: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """severity -> finding id -> how many: what the verdict rested on, without the messages."""
    counts: dict[str, Counter[str]] = {"error": Counter(), "warning": Counter(), "info": Counter()}
    for finding in bundle.get("findings") or []:
        if isinstance(finding, Mapping) and finding.get("severity") in counts:
            counts[str(finding["severity"])][str(finding.get("id"))] += 1
    return {severity: dict(sorted(ids.items())) for severity, ids in counts.items()}


def statement(
    bundle: Mapping[str, Any],
    version: str,
    environment: Mapping[str, Any],
    when: str,
    strict: bool = False,
    circumstances: Circumstances | None = None,
) -> dict[str, Any]:
    """The Statement about one bundle's report: its digest, the rules judged, the runtimes, each result, and
    what a later reader must know to rely on it: the checks that did not run, the platforms judged, whether
    warnings failed the verdict (--strict), the findings it rested on, and the key a verdict store files it
    under."""
    known = circumstances or Circumstances()
    digest = str(bundle.get("digest") or "").removeprefix("sha256:")
    platform = environment.get("platform")
    host = f"onnxruntime {environment.get('onnxruntime', '')}".strip()
    runtimes = [{"runtime": host, "platform": platform}]
    runtimes += [{"runtime": r.get("runtime"), "platform": platform} for r in bundle.get("runtimes") or []]
    comparisons = _results(bundle.get("comparisons"), host)
    for entry in bundle.get("runtimes") or []:
        comparisons += _results(entry.get("comparisons"), entry.get("runtime"))
    # Which definition of the bundle digest made the subject's digest: a reader of an older one can say so.
    subject = {
        "name": f"{bundle.get('name')}-{bundle.get('version')}",
        "digest": {"sha256": digest},
        "annotations": {"digestDefinition": DIGEST_DEFINITION},
    }
    return {
        "_type": STATEMENT_TYPE,
        "subject": [subject],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "verifier": {"id": VERIFIER_ID, "version": {"onnx-release-checker": version}},
            "timeVerified": when,
            "resourceUri": f"bundle:{bundle.get('name')}@{bundle.get('version')}",
            "policy": {"uri": "manifest:comparison", "digest": {"sha256": policy_digest(bundle)}},
            "verificationResult": "PASSED" if bundle.get("status") == "pass" else "FAILED",
            "verifiedLevels": [],
            "runtimes": runtimes,
            "comparisons": comparisons,
            "strict": strict,
            "notRun": [dict(n) for n in bundle.get("not_run") or [] if isinstance(n, Mapping)],
            "platforms": judged_platforms(bundle, known.cpu_class),
            "findings": finding_counts(bundle),
            # The release and its manifest as judged: a verdict store knows the manifest again by its text's
            # digest, and words a reused verdict from these without parsing it.
            "release": {"name": bundle.get("name"), "version": bundle.get("version")},
            "pieces": dict(bundle.get("pieces") or {}),
            **(
                {"manifest": {"file": bundle.get("manifest"), "sha256": text, "digest": bundle.get("manifest_digest")}}
                if isinstance(text := bundle.get("manifest_sha256"), str)
                else {}
            ),
            # What the verdict rests on besides the digest (checks/folder.py): a verdict store reuses it only
            # for a folder in this state.
            **({"folder": dict(folder)} if isinstance(folder := bundle.get("folder"), Mapping) else {}),
            # What the verification cost, for a matrix planned by cost (`checker plan`) when the verdict is reused.
            **({"durationSeconds": bundle["duration_s"]} if isinstance(bundle.get("duration_s"), (int, float)) else {}),
            **({"reuse": dict(known.reuse)} if known.reuse is not None else {}),
        },
    }


def sign_statement(content: Mapping[str, Any], signer: EnvelopeSigner) -> dict[str, Any]:
    from checker.signing.dsse import sign_envelope  # cryptography, of the [sign] extra: only when attesting

    return sign_envelope(PAYLOAD_TYPE, canonical_json(content).encode("utf-8"), signer)


def statements(report: Mapping[str, Any], circumstances: Sequence[Circumstances | None] = ()) -> list[dict[str, Any]]:
    """The Statement of each bundle of a report, with the circumstances given for it (by position)."""
    version, when = str(report.get("checker_version")), str(report.get("created_at"))
    environment, strict = report.get("environment") or {}, bool(report.get("strict"))
    bundles = list(report.get("bundles") or [])
    known = list(circumstances) + [None] * (len(bundles) - len(circumstances))
    return [statement(b, version, environment, when, strict, c) for b, c in zip(bundles, known)]


def sign_statements(
    contents: Sequence[Mapping[str, Any]], signer: EnvelopeSigner | KeylessSigner
) -> list[dict[str, Any]]:
    """Each Statement as a DSSE envelope (key or certificate signer) or a Sigstore bundle holding one."""
    if isinstance(signer, KeylessSigner):
        payloads = [canonical_json(c).encode("utf-8") for c in contents]
        return sign_keyless(payloads, signer.identity_token) if payloads else []
    return [sign_statement(c, signer) for c in contents]


def document_line(document: Mapping[str, Any]) -> str:
    """One signed document as its line of an `.intoto.jsonl` file (and as a verdict store's entry)."""
    return json.dumps(document, sort_keys=True) + "\n"


def write_attestations(
    report: Mapping[str, Any],
    out: Path,
    signer: EnvelopeSigner | KeylessSigner,
    circumstances: Sequence[Circumstances | None] = (),
) -> list[dict[str, Any]]:
    """One line per bundle: a DSSE envelope (key or certificate signer) or a Sigstore bundle holding one.
    Returns the documents written, in the report's order."""
    documents = sign_statements(statements(report, circumstances), signer)
    write_documents(documents, out)
    return documents


def write_documents(documents: Sequence[Mapping[str, Any]], out: Path) -> None:
    lines = [document_line(d) for d in documents]
    try:
        out.write_text("".join(lines), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--attest {out}: cannot be written ({exc.strerror or exc})") from None


def verified_statements(path: Path, trust: Trust) -> tuple[list[dict[str, Any]], int]:
    """The statements of FILE whose envelope the trusted key, a trusted chain or the trusted Sigstore identity
    signed, and how many envelopes it holds."""
    try:
        if path.stat().st_size > MAX_ATTESTATION_BYTES:
            raise AttestationError(f"{path} is larger than {MAX_ATTESTATION_BYTES} bytes")
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise AttestationError(f"{path} cannot be read ({exc})") from None
    checker = StatementChecker(trust)
    found = [statement for statement in (checker.statement(line) for line in lines) if statement is not None]
    return found, len(lines)


@dataclass(frozen=True)
class Verified:
    """A statement whose signature is trusted, who signed it, in words, and the signed document it was read
    from (as parsed, for what keeps the document: a verdict store's reused entry)."""

    statement: dict[str, Any]
    signer: str
    document: dict[str, Any]


class StatementChecker:
    """Each line's statement when its signature is trusted; Sigstore's verifier made on the first keyless line.
    A line that does not parse, or is not a verification summary, is no statement."""

    def __init__(self, trust: Trust) -> None:
        self.trust = trust
        self.keyless: KeylessVerifier | None = None

    def statement(self, line: str) -> dict[str, Any] | None:
        found = self.verified(line)
        return found.statement if found is not None else None

    def verified(self, line: str) -> Verified | None:
        try:
            document = json.loads(line)
        except ValueError:
            return None
        if not isinstance(document, dict):
            return None
        if is_sigstore_bundle(document):
            found = self._keyless(document)
        elif self.trust.key is not None or self.trust.certificates:
            found = self._envelope(document)
        else:
            found = None
        if found is None:
            return None
        payload_type, payload, signer = found
        try:
            content = json.loads(payload)
        except ValueError:
            return None
        if payload_type != PAYLOAD_TYPE or not isinstance(content, dict):
            return None
        return Verified(content, signer, document) if content.get("predicateType") == PREDICATE_TYPE else None

    def _keyless(self, document: dict[str, Any]) -> tuple[str, bytes, str] | None:
        if not (self.trust.identity and self.trust.issuer):
            return None
        try:
            if self.keyless is None:
                self.keyless = KeylessVerifier(self.trust.identity, self.trust.issuer)
            payload_type, payload = self.keyless.payload(document)
        except KeylessError as exc:
            if self.keyless is None:  # the verifier itself could not be made: nothing in the file can be checked
                raise AttestationError(str(exc)) from None
            return None
        return payload_type, payload, self.trust.whom()

    def _envelope(self, envelope: dict[str, Any]) -> tuple[str, bytes, str] | None:
        from checker.signing.dsse import EnvelopeError, pae, signer_in_words, verify_entry  # cryptography: on use

        try:
            if envelope.get("payloadType") != PAYLOAD_TYPE:
                return None
            payload = base64.b64decode(envelope["payload"], validate=True)
            content = json.loads(payload)
        except (ValueError, KeyError, TypeError, binascii.Error):
            return None
        when = _made_at(content) if isinstance(content, dict) else datetime.datetime.now(datetime.timezone.utc)
        for entry in envelope.get("signatures") or []:
            if not isinstance(entry, dict):
                continue
            try:
                verify_entry(entry, pae(PAYLOAD_TYPE, payload), self.trust, when)
            except EnvelopeError:
                continue
            return PAYLOAD_TYPE, payload, signer_in_words(entry, self.trust)
        return None


def _made_at(statement: Mapping[str, Any]) -> datetime.datetime:
    """When the statement says it was made (a certificate must have been valid then); now when it says nothing
    readable."""
    text = str((statement.get("predicate") or {}).get("timeVerified") or "")
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.datetime.now(datetime.timezone.utc)
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)
