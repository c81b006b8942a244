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
    from checker.signing.dsse import EnvelopeSigner
    from checker.signing.keyless import KeylessSigner
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
        "--attest-certificate",
        type=Path,
        metavar="CERT.pem",
        help="the certificate of --attest-key, carried in the envelope",
    )
    p.add_argument(
        "--attest-sigstore",
        action="store_true",
        help="sign --attest keyless with Sigstore (in a workflow with `id-token: write`; needs the network)",
    )
    p.add_argument(
        "--attest-certificate-chain",
        action="append",
        default=[],
        type=Path,
        metavar="CA.pem",
        help="a certificate of the chain above --attest-certificate (repeatable)",
    )
    p.add_argument(
        "--require-attestation",
        type=Path,
        metavar="FILE",
        help="accept a bundle on a trusted attestation (--trusted-key, --trusted-certificate or --sigstore-identity) "
        "of a passing verification of exactly its digest, without running the comparison again",
    )
    p.add_argument(
        "--rerun",
        action="store_true",
        help="with --require-attestation: run the comparison too; fail when its verdict differs from the attested one",
    )
    p.add_argument(
        "--reuse",
        type=Path,
        metavar="STORE",
        help="a verdict store (a folder): a bundle whose key has an entry signed by --trusted-key, "
        "--trusted-certificate or --sigstore-identity is not run again, its verdict reused; with --attest, each "
        "bundle that ran is added",
    )


def signing_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `Options` fields of the signature and attestation flags."""
    _check_attest(args)
    if args.attest is not None and getattr(args, "shard", None) is not None:
        raise UsageError("--attest attests the whole bundle's verdict: not with --shard (merge the shards first)")
    attesting = args.require_attestation is not None
    if attesting:
        if args.trusted_key is None and not args.trusted_certificate and not args.sigstore_identity:
            raise UsageError(
                "--require-attestation needs --trusted-key, --trusted-certificate or --sigstore-identity: "
                "the attestation's signer"
            )
        if args.sigstore_identity and not args.sigstore_issuer:
            raise UsageError("--sigstore-identity needs --sigstore-issuer")
        if not args.require_attestation.is_file():
            raise UsageError(f"no such file: {args.require_attestation}")
        if args.attest is not None and not args.rerun:
            raise UsageError("--attest with --require-attestation attests a comparison not run here: add --rerun")
    elif args.rerun:
        raise UsageError("--rerun needs --require-attestation FILE: it re-runs the comparison an attestation judged")
    _check_reuse(args)
    trust = trust_from(args)
    return {
        "trust": trust,
        "attestation": args.require_attestation,
        "attestation_trust": (trust or _trust(args)) if attesting else None,
        "rerun_attested": attesting and args.rerun,
        "run_comparison": not attesting or args.rerun,
        "reuse": args.reuse,
        "reuse_trust": (trust or _trust(args)) if args.reuse is not None else None,
    }


def _check_reuse(args: argparse.Namespace) -> None:
    """--reuse STORE: whom its entries must be signed by, and nothing that makes a verdict other than a
    whole bundle's, judged here."""
    if args.reuse is None:
        return
    if args.trusted_key is None and not args.trusted_certificate and not args.sigstore_identity:
        raise UsageError(
            "--reuse needs --trusted-key, --trusted-certificate or --sigstore-identity: the signer of the verdicts "
            "it may reuse"
        )
    if args.sigstore_identity and not args.sigstore_issuer:
        raise UsageError("--sigstore-identity needs --sigstore-issuer")
    if args.require_attestation is not None:
        raise UsageError("--reuse with --require-attestation: a store holds verdicts judged by the checker; give one")
    if getattr(args, "shard", None) is not None:
        raise UsageError("--reuse reuses whole bundles' verdicts: not with --shard (a shard's verdict is not one)")
    if getattr(args, "device_outputs", None):
        raise UsageError(
            "--reuse with --device-outputs: a device's outputs are judged as the device sent them, and a stored "
            "verdict is keyed on the bundle and this machine, not on a folder of outputs"
        )
    if getattr(args, "run_validation", False):
        raise UsageError(
            "--reuse with --run-validation: the validation command may read any file and the environment, which "
            "no stored verdict's key names; run it without --reuse"
        )
    vague = [spec for spec in getattr(args, "runtimes", []) if spec.split("==")[-1].strip() in ("oldest", "newest")]
    if vague:
        raise UsageError(
            f"--reuse keys a verdict on the runtime it ran in: name its version, not --runtime {vague[0]} (which "
            "resolves to another release as new ones are published)"
        )
    if args.reuse.exists() and not args.reuse.is_dir():
        raise UsageError(f"--reuse {args.reuse}: not a folder (a verdict store is a folder of attestations)")


def _check_attest(args: argparse.Namespace) -> None:
    if args.attest is None:
        if args.attest_key or args.attest_certificate or args.attest_certificate_chain or args.attest_sigstore:
            raise UsageError(
                "--attest-key, --attest-certificate and --attest-sigstore sign an attestation: add --attest OUT"
            )
        return
    if args.attest_sigstore:
        if args.attest_key or args.attest_certificate:
            raise UsageError("--attest-sigstore signs keyless: give it without --attest-key and --attest-certificate")
        return
    if args.attest_key is None:
        raise UsageError("--attest needs --attest-key KEY.pem (or --attest-sigstore), what signs the attestation")
    if args.attest_certificate is None and args.attest_certificate_chain:
        raise UsageError("--attest-certificate-chain needs --attest-certificate")
    for path in [args.attest_key, args.attest_certificate, *args.attest_certificate_chain]:
        if path is not None and not path.is_file():
            raise UsageError(f"no such file: {path}")


def attest_signer(args: argparse.Namespace) -> EnvelopeSigner | KeylessSigner | None:
    """What signs --attest (a key, a certificate chain or Sigstore), or None without --attest."""
    if args.attest is None:
        return None
    # The attestation's signers, loaded only for --attest.
    from checker.signing.dsse import EnvelopeSigner
    from checker.signing.keyless import KeylessSigner

    if args.attest_sigstore:
        return KeylessSigner(os.environ.get("SIGSTORE_ID_TOKEN") or None)  # a token given explicitly, else ambient
    return EnvelopeSigner(args.attest_key, args.attest_certificate, list(args.attest_certificate_chain))


def trust_from(args: argparse.Namespace) -> Trust | None:
    """Whom `checker verify` trusts, or None when no signature is required."""
    given = args.trusted_key or args.trusted_certificate or args.sigstore_identity
    if not args.require_signature:
        if given and args.require_attestation is None and getattr(args, "reuse", None) is None:
            raise UsageError(
                "--trusted-key, --trusted-certificate and --sigstore-identity need --require-signature, "
                "--require-attestation or --reuse"
            )
        return None
    if not given:
        raise UsageError("--require-signature needs --trusted-key, --trusted-certificate or --sigstore-identity")
    if args.sigstore_identity and not args.sigstore_issuer:
        raise UsageError("--sigstore-identity needs --sigstore-issuer")
    return _trust(args)


def _trust(args: argparse.Namespace) -> Trust:
    for path in [args.trusted_key, *args.trusted_certificate]:
        if path is not None and not path.is_file():
            raise UsageError(f"no such file: {path}")
    from checker.context import Trust  # the stages' shared state, loaded only when a run needs it

    return Trust(args.trusted_key, list(args.trusted_certificate), args.sigstore_identity, args.sigstore_issuer)
