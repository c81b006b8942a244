"""`checker device-kit PATH -o KIT`: parse, call, print, return a status. The work is imported when it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "device-kit",
        help="write a self-contained folder a device runs; judge what it sends back with verify --device-outputs",
        description="Write the graphs, the case inputs (.npy and ONNX .pb), the raw inputs, the session settings "
        "and kit.json into KIT, with two runners: run.py (NumPy and onnxruntime) and run.mjs (onnxruntime-node). "
        "A runner writes outputs/<graph>/<case>/<output>.npy (and, with --preprocess, the application's tensors) and "
        "device.json into a folder; `checker verify PATH --device-outputs DIR` judges it as one more platform.",
    )
    p.add_argument("path", metavar="PATH", help="a bundle folder, its manifest, or an archive")
    p.add_argument("-o", "--output", required=True, type=Path, metavar="KIT", help="the kit folder (new or empty)")
    p.set_defaults(func=cmd_device_kit)


def cmd_device_kit(args: argparse.Namespace) -> int:
    from checker.devices.kit import make_kit
    from checker.errors import UsageError

    if not Path(args.path).exists():
        raise UsageError(f"no such path: {args.path}")
    result = make_kit(Path(args.path), args.output)
    sys.stdout.write(
        f"wrote {result.folder}: {result.graphs} graph(s), {result.cases} case(s); on the device run "
        f"`python {result.folder}/run.py --out DIR` or `node {result.folder}/run.mjs --out DIR`, then "
        f"`checker verify {args.path} --device-outputs DIR`\n"
    )
    return 0
