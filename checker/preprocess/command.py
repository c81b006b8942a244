"""`checker preprocess PATH --input NAME FILE -o OUT.npy`: the tensor a raw file becomes in a bundle.

This module only registers the command (`checker --help` imports it); its work is in running.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "preprocess",
        help="write the tensor a raw image, text, audio or table becomes with a bundle's declared preprocessing",
        description="Apply an input's declared preprocessing to a raw file and write the tensor. With an "
        ".npz output, a text input also writes the inputs derived from it (attention_mask, token_type_ids).",
    )
    p.add_argument("path", metavar="PATH", nargs="?", help="a bundle folder, its manifest, or an archive")
    p.add_argument("--input", nargs=2, metavar=("NAME", "FILE"), help="the input and its raw file")
    p.add_argument("-o", "--output", type=Path, metavar="OUT", help="the .npy (or .npz) to write")
    p.add_argument(
        "--show-steps",
        action="store_true",
        help="print each image input's preprocessing as the ordered steps it runs (shorthand fields expanded)",
    )
    p.add_argument(
        "--import",
        dest="import_file",
        nargs=2,
        metavar=("FORMAT", "FILE"),
        help="print the steps an Albumentations (A.save) or OpenVINO Accuracy Checker pipeline file becomes, or "
        "the tabular columns a fitted scikit-learn ColumnTransformer saved with skops becomes (FORMAT: "
        "albumentations, openvino or skops), to paste into a manifest",
    )
    p.set_defaults(func=cmd_preprocess)


def cmd_preprocess(args: argparse.Namespace) -> int:
    # The work loads NumPy, the bundle and the preprocessing: only a run of this command imports it.
    from checker.preprocess.running import run

    return run(args)
