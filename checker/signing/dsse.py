"""DSSE envelopes signed with an elliptic-curve key, alone or with its certificate chain, and checked against a
trusted public key or trusted CA certificates.

A certificate signer's envelope carries its chain in the signature entry (`certificates`: the signing
certificate first, then the certificates above it, PEM), as Sigstore bundles carry theirs; the chain is checked
against the trusted CAs with OpenSSL's store, as model-signing checks a certificate-signed bundle, at the time
the statement says it was made, and the signing certificate must allow digital signatures.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from checker.context import Trust
from checker.errors import UsageError

if TYPE_CHECKING:
    from cryptography import x509

EXTRA = "pip install 'onnx-release-checker[sign]'"
MAX_CHAIN = 8  # certificates in one signature entry: a chain longer than this is not one a publisher uses


class EnvelopeError(Exception):
    """A signature entry that does not verify with the trusted key or chain."""


@dataclass
class EnvelopeSigner:
    """The publisher's key (a PEM file, or its PEM bytes as a workflow's secret gives them, never written to a
    file), and its certificate with the chain above it for a certificate signer."""

    key: Path | bytes
    certificate: Path | None = None
    chain: list[Path] = field(default_factory=list)


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what the signature covers."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def key_id(public: ec.EllipticCurvePublicKey) -> str:
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def sign_envelope(payload_type: str, payload: bytes, signer: EnvelopeSigner) -> dict[str, Any]:
    private = _private_key(signer.key)
    entry: dict[str, Any] = {"keyid": key_id(private.public_key())}
    if signer.certificate is not None:
        chain = [_certificate(signer.certificate, "--attest-certificate")]
        chain += [c for path in signer.chain for c in _certificates(path, "--attest-certificate-chain")]
        if chain[0].public_key() != private.public_key():
            raise UsageError(f"--attest-certificate {signer.certificate}: not the certificate of --attest-key")
        entry["certificates"] = [c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in chain]
    signature = private.sign(pae(payload_type, payload), ec.ECDSA(hashes.SHA256()))
    entry["sig"] = base64.b64encode(signature).decode("ascii")
    return {"payloadType": payload_type, "payload": base64.b64encode(payload).decode("ascii"), "signatures": [entry]}


def verify_entry(entry: dict[str, Any], signed: bytes, trust: Trust, when: datetime.datetime) -> None:
    """Raises EnvelopeError unless the signature entry is the trusted key's, or a trusted chain's, over `signed`."""
    try:
        sig = base64.b64decode(entry["sig"], validate=True)
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise EnvelopeError(f"a signature entry without a readable sig ({exc})") from None
    public = load_public_key(trust.key) if trust.key is not None else _chained_key(entry, trust, when)
    try:
        public.verify(sig, signed, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise EnvelopeError("the signature does not verify") from None


def load_public_key(path: Path) -> ec.EllipticCurvePublicKey:
    try:
        pem = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--trusted-key {path}: not a PEM public key ({exc})") from None
    return _public_key(pem, str(path))


@functools.lru_cache(maxsize=8)
def _public_key(pem: bytes, name: str) -> ec.EllipticCurvePublicKey:
    """The key of a PEM file's bytes, parsed once: a verdict store checks hundreds of entries by one key."""
    try:
        public = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--trusted-key {name}: not a PEM public key ({exc})") from None
    if not isinstance(public, ec.EllipticCurvePublicKey):
        raise UsageError(f"--trusted-key {name}: not an elliptic-curve key")
    return public


def _private_key(source: Path | bytes) -> ec.EllipticCurvePrivateKey:
    name = "the attest-key input" if isinstance(source, bytes) else f"--attest-key {source}"
    try:
        pem = source if isinstance(source, bytes) else source.read_bytes()
        private = serialization.load_pem_private_key(pem, password=None)
    except (OSError, ValueError, TypeError) as exc:
        # cryptography's message says what is wrong with the PEM; it never quotes the key.
        raise UsageError(f"{name}: not a PEM private key ({exc})") from None
    if not isinstance(private, ec.EllipticCurvePrivateKey):
        raise UsageError(f"{name}: not an elliptic-curve key")
    return private


def _certificates(path: Path, flag: str) -> list[x509.Certificate]:
    from cryptography import x509  # certificates only: a key's signature is checked without loading them

    try:
        found = x509.load_pem_x509_certificates(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{flag} {path}: not a PEM certificate ({exc})") from None
    return found


def _certificate(path: Path, flag: str) -> x509.Certificate:
    found = _certificates(path, flag)
    if len(found) != 1:
        raise UsageError(f"{flag} {path}: holds {len(found)} certificates, not one")
    return found[0]


def _chained_key(entry: dict[str, Any], trust: Trust, when: datetime.datetime) -> ec.EllipticCurvePublicKey:
    """The signing certificate's key, once its chain is checked against the trusted CAs."""
    try:
        from OpenSSL import crypto  # pyOpenSSL, the [sign] extra: only certificate chains need it
    except ImportError as exc:
        raise UsageError(f"checking a certificate chain needs pyOpenSSL ({exc}): {EXTRA}") from None
    from cryptography import x509

    pems = entry.get("certificates")
    if not isinstance(pems, list) or not pems or len(pems) > MAX_CHAIN:
        raise EnvelopeError("the signature carries no certificate chain")
    try:
        chain = [x509.load_pem_x509_certificate(str(pem).encode("ascii")) for pem in pems]
    except (ValueError, UnicodeEncodeError) as exc:
        raise EnvelopeError(f"the signature's certificates cannot be read ({exc})") from None
    store = crypto.X509Store()
    for path in trust.certificates:
        for ca in _certificates(path, "--trusted-certificate"):
            store.add_cert(crypto.X509.from_cryptography(ca))
    store.set_time(when)
    leaf, above = chain[0], [crypto.X509.from_cryptography(c) for c in chain[1:]]
    try:
        crypto.X509StoreContext(store, crypto.X509.from_cryptography(leaf), above).verify_certificate()
    except crypto.X509StoreContextError as exc:
        raise EnvelopeError(f"the signing certificate does not chain to a trusted CA ({exc})") from None
    try:
        usage = leaf.extensions.get_extension_for_class(x509.KeyUsage).value
        signs = usage.digital_signature
    except x509.ExtensionNotFound:
        signs = False
    public = leaf.public_key()
    if not signs or not isinstance(public, ec.EllipticCurvePublicKey):
        raise EnvelopeError("the signing certificate is not an elliptic-curve key for digital signatures")
    return public


def signer_in_words(entry: dict[str, Any], trust: Trust) -> str:
    """Who signed a verified signature entry: the trusted key, or the signing certificate's subject and the CA
    it chains to."""
    if trust.key is not None:
        return trust.whom()
    from cryptography import x509

    pems = entry.get("certificates")
    try:
        leaf = x509.load_pem_x509_certificate(str(pems[0]).encode("ascii")) if isinstance(pems, list) else None
    except (ValueError, UnicodeEncodeError, IndexError):
        leaf = None
    if leaf is None:
        return trust.whom()
    return f"{leaf.subject.rfc4514_string()} ({trust.whom()})"
