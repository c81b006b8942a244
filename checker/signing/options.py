"""The signer options of `checker sign` and `checker pack --sign`, and the signature and attestation options of
`checker verify`: argument parsing and wiring only."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.errors import UsageError

if TYPE_CHECKING:
    from checker.context import Trust
    from checker.signing.sign import Signer


def add_signer_options(p: argparse.ArgumentParser) -> None:
    """The signer flags `checker sign` and `checker pack --sign` share."""
    p.add_argument("--key", type=Path, metavar="KEY.pem", help="the private elliptic-curve key (PEM)")
    p.add_argument("--certificate", type=Path, metavar="CERT.pem", help="the signing certificate of --key")
    p.add_argument(
        "--certificate-chain",
        action="append",
        default=[],
        type=Path,
        metavar="CA.pem",
        help="a certificate of the chain above --certificate (repeatable)",
    )
    p.add_argument("--sigstore", action="store_true", help="sign keyless with Sigstore (needs the network)")


def signer_from(args: argparse.Namespace) -> Signer:
    """The signer the flags of `add_signer_options` name; a usage error before any work when they name none."""
    from checker.signing.sign import Signer  # model-signing's wrapper: loaded when something is signed

    if args.sigstore and (args.key or args.certificate):
        raise UsageError("--sigstore signs keyless: give it without --key and --certificate")
    if not args.sigstore and args.key is None:
        raise UsageError("signing needs --key KEY.pem (with --certificate for a certificate signer) or --sigstore")
    if args.certificate is None and args.certificate_chain:
        raise UsageError("--certificate-chain needs --certificate")
    for path in [args.key, args.certificate, *args.certificate_chain]:
        if path is not None and not path.is_file():
            raise UsageError(f"no such file: {path}")
    token = os.environ.get("SIGSTORE_ID_TOKEN") or None  # an OIDC token given explicitly, else ambient
    return Signer(args.key, args.certificate, list(args.certificate_chain), args.sigstore, token)


def add_verify_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--require-signature",
        action="store_true",
        help="fail unless bundle.sig is a valid signature of exactly these files by a trusted signer",
    )
    p.add_argument("--trusted-key", type=Path, metavar="KEY.pub", help="the public key the bundle must be signed with")
    p.add_argument(
        "--trusted-certificate",
        action="append",
        default=[],
        type=Path,
        metavar="CA.pem",
        help="a certificate the signing certificate must chain to (repeatable)",
    )
    p.add_argument(
        "--sigstore-identity", metavar="IDENTITY", help="the Sigstore signer's identity (with --sigstore-issuer)"
    )
    p.add_argument("--sigstore-issuer", metavar="URL", help="the OIDC issuer of --sigstore-identity")
    p.add_argument(
        "--attest",
        type=Path,
        metavar="OUT",
        help="write the verdict as a signed in-toto attestation (one DSSE envelope per bundle, a line each)",
    )
    p.add_argument("--attest-key", type=Path, metavar="KEY.pem", help="the elliptic-curve key that signs --attest")
    p.add_argument(
        "--require-attestation",
        type=Path,
        metavar="FILE",
        help="accept a bundle on a trusted attestation (--trusted-key) of a passing verification of exactly its "
        "digest, without running the comparison again",
    )


def signing_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `Options` fields of the signature and attestation flags."""
    if args.attest is not None and args.attest_key is None:
        raise UsageError("--attest needs --attest-key KEY.pem, the key that signs the attestation")
    if args.require_attestation is not None:
        if args.trusted_key is None:
            raise UsageError("--require-attestation needs --trusted-key, the public key of the attestation's signer")
        if not args.require_attestation.is_file():
            raise UsageError(f"no such file: {args.require_attestation}")
    return {
        "trust": trust_from(args),
        "attestation": args.require_attestation,
        "attestation_key": args.trusted_key if args.require_attestation is not None else None,
        "run_comparison": args.require_attestation is None,
    }


def write_attestation(args: argparse.Namespace, report: dict[str, Any]) -> None:
    if args.attest is not None:
        from checker.signing.attest import write_attestations  # the attestation code, loaded only for --attest

        write_attestations(report, args.attest, args.attest_key)


def trust_from(args: argparse.Namespace) -> Trust | None:
    """Whom `checker verify` trusts, or None when no signature is required."""
    given = args.trusted_key or args.trusted_certificate or args.sigstore_identity
    if not args.require_signature:
        if given and not (args.require_attestation is not None and args.trusted_key and not args.trusted_certificate):
            raise UsageError(
                "--trusted-key, --trusted-certificate and --sigstore-identity need --require-signature "
                "(or --trusted-key with --require-attestation)"
            )
        return None
    if not given:
        raise UsageError("--require-signature needs --trusted-key, --trusted-certificate or --sigstore-identity")
    if args.sigstore_identity and not args.sigstore_issuer:
        raise UsageError("--sigstore-identity needs --sigstore-issuer")
    for path in [args.trusted_key, *args.trusted_certificate]:
        if path is not None and not path.is_file():
            raise UsageError(f"no such file: {path}")
    from checker.context import Trust  # the stages' shared state, loaded only when a run needs it

    return Trust(args.trusted_key, list(args.trusted_certificate), args.sigstore_identity, args.sigstore_issuer)
