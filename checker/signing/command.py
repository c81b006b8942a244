"""`checker sign BUNDLE`: argument parsing and wiring only (verify's signature options are in `options.py`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from checker.reports.options import check_paths
from checker.terminal import printable

EXIT_PASS = 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "sign",
        help="sign a bundle's release files (model-signing's format) into bundle.sig",
        description="Signs the manifest, bundle.sha256 and every named file with OpenSSF model-signing, into "
        "bundle.sig beside the manifest; `model_signing verify` and `checker verify --require-signature` "
        "accept it. A key (and certificate) signs offline; --sigstore signs keyless (in a workflow with "
        "`id-token: write`, the workflow's identity).",
    )
    p.add_argument("path", type=Path, metavar="BUNDLE", help="the bundle folder or its manifest")
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
    p.set_defaults(func=cmd_sign)


def cmd_sign(args: argparse.Namespace) -> int:
    from checker.signing.sign import Signer, sign_bundle  # model-signing and its crypto: not paid by --help

    check_paths([str(args.path)])
    token = os.environ.get("SIGSTORE_ID_TOKEN") or None  # an OIDC token given explicitly, else ambient
    signer = Signer(args.key, args.certificate, list(args.certificate_chain), args.sigstore, token)
    signed = sign_bundle(args.path, signer)
    sys.stdout.write(printable(f"signed {len(signed.files)} files into {signed.signature}") + "\n")
    return EXIT_PASS
