"""The verdict as an attestation: an in-toto Statement about the bundle digest whose predicate is a
verification summary (SLSA's Verification Summary Attestation, with the checker's figures added), signed in a
DSSE envelope with the publisher's elliptic-curve key.

`checker verify --attest OUT` writes one envelope per bundle, one a line (in-toto's `.intoto.jsonl`);
`checker verify --require-attestation FILE` accepts a bundle when a trusted envelope in FILE attests a passing
verification of exactly its digest, without running the comparison again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from checker.errors import UsageError
from checker.manifest.canonical import canonical_json

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1"
VERIFIER_ID = "https://github.com/onnx-release-checker/onnx-release-checker"
MAX_ATTESTATION_BYTES = 16 << 20


class AttestationError(Exception):
    """An envelope that does not verify or is not what the checker writes."""


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


def statement(bundle: Mapping[str, Any], version: str, environment: Mapping[str, Any], when: str) -> dict[str, Any]:
    """The Statement about one bundle's report: its digest, the rules judged, the runtimes, each result."""
    digest = str(bundle.get("digest") or "").removeprefix("sha256:")
    platform = environment.get("platform")
    host = f"onnxruntime {environment.get('onnxruntime', '')}".strip()
    runtimes = [{"runtime": host, "platform": platform}]
    runtimes += [{"runtime": r.get("runtime"), "platform": platform} for r in bundle.get("runtimes") or []]
    comparisons = _results(bundle.get("comparisons"), host)
    for entry in bundle.get("runtimes") or []:
        comparisons += _results(entry.get("comparisons"), entry.get("runtime"))
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": f"{bundle.get('name')}-{bundle.get('version')}", "digest": {"sha256": digest}}],
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
        },
    }


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what the signature covers."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _key_id(public: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def sign_statement(content: Mapping[str, Any], key: Path) -> dict[str, Any]:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"--attest-key {key}: not a PEM private key ({exc})") from None
    if not isinstance(private, ec.EllipticCurvePrivateKey):
        raise UsageError(f"--attest-key {key}: not an elliptic-curve key")
    payload = canonical_json(content).encode("utf-8")
    signature = private.sign(pae(PAYLOAD_TYPE, payload), ec.ECDSA(hashes.SHA256()))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [{"keyid": _key_id(private.public_key()), "sig": base64.b64encode(signature).decode("ascii")}],
    }


def write_attestations(report: Mapping[str, Any], out: Path, key: Path) -> None:
    version, when = str(report.get("checker_version")), str(report.get("created_at"))
    environment = report.get("environment") or {}
    envelopes = [sign_statement(statement(b, version, environment, when), key) for b in report.get("bundles") or []]
    lines = [json.dumps(e, sort_keys=True) for e in envelopes]
    try:
        out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--attest {out}: cannot be written ({exc.strerror or exc})") from None


def load_public_key(path: Path) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        public = serialization.load_pem_public_key(path.read_bytes())
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"--trusted-key {path}: not a PEM public key ({exc})") from None
    if not isinstance(public, ec.EllipticCurvePublicKey):
        raise UsageError(f"--trusted-key {path}: not an elliptic-curve key")
    return public


def verified_statements(path: Path, public: Any) -> tuple[list[dict[str, Any]], int]:
    """The statements of FILE whose envelope the trusted key signed, and how many envelopes it holds."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        if path.stat().st_size > MAX_ATTESTATION_BYTES:
            raise AttestationError(f"{path} is larger than {MAX_ATTESTATION_BYTES} bytes")
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise AttestationError(f"{path} cannot be read ({exc})") from None
    out = []
    for line in lines:
        try:
            envelope = json.loads(line)
            if envelope.get("payloadType") != PAYLOAD_TYPE:
                continue
            payload = base64.b64decode(envelope["payload"], validate=True)
            for entry in envelope.get("signatures") or []:
                try:
                    sig = base64.b64decode(entry["sig"], validate=True)
                    public.verify(sig, pae(PAYLOAD_TYPE, payload), ec.ECDSA(hashes.SHA256()))
                except (InvalidSignature, KeyError, TypeError, ValueError, binascii.Error):
                    continue
                found = json.loads(payload)
                if isinstance(found, dict) and found.get("predicateType") == PREDICATE_TYPE:
                    out.append(found)
                break
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            continue
    return out, len(lines)
