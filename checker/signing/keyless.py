"""Sigstore keyless attestations: the Statement signed with a short-lived certificate Sigstore issues for an OIDC
identity (in a workflow with `id-token: write`, the workflow's own), logged in its transparency log, and written
as a Sigstore bundle (which holds the DSSE envelope) on its line of the `.intoto.jsonl` file; checked against the
identity and issuer the device trusts, as `--require-signature --sigstore-identity` checks a bundle signature.

Both need Sigstore's public services (its trust root, Fulcio and Rekor): they are the one part of the checker's
attestations that does not work offline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from checker.errors import UsageError

EXTRA = "pip install 'onnx-release-checker[sign]'"
BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle"


@dataclass
class KeylessSigner:
    """Sigstore keyless signing: the ambient OIDC identity, or a token given explicitly."""

    identity_token: str | None = None


class KeylessError(Exception):
    """A Sigstore bundle that does not verify for the trusted identity, or Sigstore that cannot be reached."""


def is_sigstore_bundle(document: object) -> bool:
    return isinstance(document, dict) and str(document.get("mediaType", "")).startswith(BUNDLE_MEDIA_TYPE)


def sign_keyless(payloads: list[bytes], identity_token: str | None) -> list[dict[str, Any]]:
    """Each in-toto Statement (its JSON bytes) as a Sigstore bundle, signed for the ambient OIDC identity (or the
    token given)."""
    try:
        from sigstore import dsse, models, oidc, sign  # the [sign] extra: only when signing keyless
    except ImportError as exc:
        raise UsageError(f"Sigstore signing needs the sigstore package ({exc}): {EXTRA}") from None
    token = identity_token or oidc.detect_credential()
    if not token:
        raise UsageError(
            "--attest-sigstore found no OIDC identity: run it in a workflow with `id-token: write`, "
            "or set SIGSTORE_ID_TOKEN"
        )
    try:
        context = sign.SigningContext.from_trust_config(models.ClientTrustConfig.production())
        with context.signer(oidc.IdentityToken(token)) as signer:
            return [json.loads(signer.sign_dsse(dsse.Statement(p)).to_json()) for p in payloads]
    except Exception as exc:  # sigstore's network and token errors share no base class
        raise UsageError(f"--attest-sigstore: Sigstore could not sign the attestation ({exc})") from None


class KeylessVerifier:
    """Sigstore's verifier for one identity and issuer, its trust root fetched once."""

    def __init__(self, identity: str, issuer: str) -> None:
        try:
            from sigstore import models, verify  # the [sign] extra: only when checking a keyless attestation
        except ImportError as exc:
            raise KeylessError(f"checking a Sigstore attestation needs the sigstore package ({exc}): {EXTRA}") from None
        try:
            root = models.ClientTrustConfig.production().trusted_root
            self._verifier = verify.Verifier(trusted_root=root)
        except Exception as exc:  # the trust root comes over the network (TUF); any failure means not checked
            raise KeylessError(f"Sigstore's trust root cannot be had ({exc})") from None
        self._policy = verify.policy.Identity(identity=identity, issuer=issuer)
        self._models = models

    def payload(self, document: dict[str, Any]) -> tuple[str, bytes]:
        """(payload type, payload) of a Sigstore bundle that the trusted identity signed."""
        try:
            bundle = self._models.Bundle.from_json(json.dumps(document))
            return self._verifier.verify_dsse(bundle, self._policy)
        except Exception as exc:  # sigstore's verification errors share no base class
            raise KeylessError(f"not signed by the trusted Sigstore identity ({exc})") from None
