"""The work of `checker preprocess`: the tensors a raw file becomes, the step lists, an imported pipeline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from checker.bundle.opening import OpenedBundle, open_bundle
from checker.errors import BundleError, Error, UsageError
from checker.manifest.load import load_manifest
from checker.manifest.model.tabular import Tabular
from checker.preprocess.checked import checked
from checker.preprocess.image.importers import FORMATS, read_pipeline
from checker.preprocess.rebuild import Inputs, open_source
from checker.preprocess.showsteps import show_steps
from checker.preprocess.tabular.skops_import import import_skops
from checker.terminal import printable


def run(args: argparse.Namespace) -> int:
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
    try:
        with path.open("wb") as fh:
            if _is_npz(path):
                np.savez(fh, **tensors)
            else:
                np.save(fh, tensors[name], allow_pickle=False)
    except OSError as e:
        raise Error(f"cannot write {path}: {e.strerror}") from e


def _show_steps(bundle: Path) -> int:
    if not bundle.exists():
        raise UsageError(f"no such path: {bundle}")
    with open_bundle(bundle) as opened:
        manifest_path = _manifest_path(opened, bundle)
        manifest, found = load_manifest(manifest_path)
        if manifest is None:
            raise BundleError("; ".join(f.message for f in found) or f"{manifest_path} cannot be read")
        lines = show_steps(_inputs(manifest.data, opened.root))
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))
    return 0


def _import(fmt: str, path: Path) -> int:
    if fmt not in (*FORMATS, "skops"):
        raise UsageError(f"--import FORMAT is {fmt!r}; expected one of {', '.join((*FORMATS, 'skops'))}")
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    if fmt == "skops":
        return _import_skops(path)
    steps = read_pipeline(fmt, path, path.name)
    lines = [f"# {path.name} ({fmt}) as steps", "steps:", *(f"  - {step.words()}" for step in steps)]
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))
    return 0


def _import_skops(path: Path) -> int:
    """A fitted ColumnTransformer's tabular block, as YAML to paste under an input's `preprocessing`."""
    import yaml

    block, notes = import_skops(path, path.name)
    checked(Tabular, block, f"the block {path.name} becomes")  # as a manifest's block must be
    text = yaml.safe_dump({"preprocessing": block}, sort_keys=False, default_flow_style=None, width=120)
    lines = [f"# {path.name} (skops) as a tabular block", *(f"# {note}" for note in notes), *text.splitlines()]
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))
    return 0


def _inputs(data: Any, root: Path) -> Inputs:
    """The manifest's inputs, each judged by the schema as verify would (the rest of the manifest need not be
    complete yet: preprocessing is often tried before a release is)."""
    entries = data.get("inputs") if isinstance(data, dict) else None
    return Inputs.from_data(entries if entries is not None else [], root)


def rebuild_file(manifest_path: Path, root: Path, name: str, raw: Path, npz: bool = False) -> dict[str, Any]:
    """The tensors `raw` becomes as input `name` (with the inputs derived from it when `npz`)."""
    manifest, found = load_manifest(manifest_path)
    if manifest is None:
        raise BundleError("; ".join(f.message for f in found) or f"{manifest_path} cannot be read")
    inputs = _inputs(manifest.data, root)
    if inputs.entry(name) is None:
        known = ", ".join(e.name for e in inputs.entries) or "none"
        raise UsageError(f"the manifest has no input '{name}' (its inputs: {known})")
    source = open_source(inputs, name, raw, raw.name, only_named=not npz)
    if source is None:
        kind = inputs.kind(name)
        raise Error(
            f"input '{name}' has preprocessing kind {kind!r}; only image, text, tabular and audio (with "
            "`steps`) inputs are rebuilt"
        )
    return source.build()
