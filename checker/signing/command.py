"""`checker sign BUNDLE`: argument parsing and wiring only (verify's signature options are in `options.py`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from checker.reports.options import check_paths
from checker.signing.options import add_signer_options, signer_from
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
    add_signer_options(p)
    p.set_defaults(func=cmd_sign)


def cmd_sign(args: argparse.Namespace) -> int:
    from checker.signing.sign import sign_bundle  # model-signing and its crypto: not paid by --help

    check_paths([str(args.path)])
    signed = sign_bundle(args.path, signer_from(args))
    sys.stdout.write(printable(f"signed {len(signed.files)} files into {signed.signature}") + "\n")
    return EXIT_PASS
