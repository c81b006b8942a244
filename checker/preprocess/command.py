"""`checker preprocess PATH --input NAME FILE -o OUT.npy`: the tensor a raw file becomes in a bundle."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.errors import BundleError, Error, UsageError

if TYPE_CHECKING:
    from checker.bundle.opening import OpenedBundle


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "preprocess",
        help="write the tensor a raw image or text becomes with a bundle's declared preprocessing",
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
        help="print the steps an Albumentations (A.save) or OpenVINO Accuracy Checker pipeline file becomes "
        "(FORMAT: albumentations or openvino), to paste into a manifest",
    )
    p.set_defaults(func=cmd_preprocess)


def cmd_preprocess(args: argparse.Namespace) -> int:
    from checker.bundle.opening import open_bundle
    from checker.preprocess.rebuild import rebuild_file

    if args.import_file is not None:
        return _import(args.import_file[0], Path(args.import_file[1]))
    if args.path is None:
        raise UsageError("preprocess needs PATH, the bundle (or --import FORMAT FILE)")
    if args.show_steps:
        return _show_steps(Path(args.path))
    if args.input is None or args.output is None:
        raise UsageError("preprocess needs --input NAME FILE and -o OUT (or --show-steps)")
    name, raw = args.input[0], Path(args.input[1])
    if not raw.is_file():
        raise UsageError(f"no such file: {raw}")
    bundle = Path(args.path)
    if not bundle.exists():
        raise UsageError(f"no such path: {bundle}")
    with open_bundle(bundle) as opened:
        tensors = rebuild_file(_manifest_path(opened, bundle), opened.root, name, raw, npz=_is_npz(args.output))
    _write(args.output, tensors, name)
    from checker.render.escape import printable

    for key, tensor in tensors.items():
        sys.stdout.write(printable(f"{args.output}: input '{key}', {tensor.dtype} {list(tensor.shape)}") + "\n")
    return 0


def _manifest_path(opened: OpenedBundle, bundle: Path) -> Path:
    """The opened bundle's manifest; a BundleError saying why when it has none."""
    if opened.manifest_path is None:
        problems = "; ".join(f.message for f in opened.findings) or "no manifest found"
        raise BundleError(f"{bundle}: {problems}")
    return opened.manifest_path


def _is_npz(path: Path) -> bool:
    return path.suffix.lower() == ".npz"


def _write(path: Path, tensors: dict[str, Any], name: str) -> None:
    import numpy as np

    try:
        with path.open("wb") as fh:
            if _is_npz(path):
                np.savez(fh, **tensors)
            else:
                np.save(fh, tensors[name], allow_pickle=False)
    except OSError as e:
        raise Error(f"cannot write {path}: {e.strerror}") from e


def _show_steps(bundle: Path) -> int:
    from checker.bundle.opening import open_bundle
    from checker.manifest.load import load_manifest
    from checker.preprocess.rebuild import Inputs
    from checker.preprocess.showsteps import show_steps
    from checker.render.escape import printable

    if not bundle.exists():
        raise UsageError(f"no such path: {bundle}")
    with open_bundle(bundle) as opened:
        manifest_path = _manifest_path(opened, bundle)
        manifest, found = load_manifest(manifest_path)
        if manifest is None:
            raise BundleError("; ".join(f.message for f in found) or f"{manifest_path} cannot be read")
        entries = [e for e in manifest.data.get("inputs") or [] if isinstance(e, dict)]
        lines = show_steps(Inputs(entries, opened.root))
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))
    return 0


def _import(fmt: str, path: Path) -> int:
    from checker.preprocess.image.importers import FORMATS, read_pipeline
    from checker.render.escape import printable

    if fmt not in FORMATS:
        raise UsageError(f"--import FORMAT is {fmt!r}; expected one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    steps = read_pipeline(fmt, path, path.name)
    lines = [f"# {path.name} ({fmt}) as steps", "steps:", *(f"  - {step.words()}" for step in steps)]
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))
    return 0
