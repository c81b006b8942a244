"""Adding a comparison case to a bundle: tensors as .npy files, raw inputs copied, the manifest updated in place.

The manifest is edited as a round-trip tree, so its comments and layout survive. Files are written before the
manifest, so the manifest never names a file that is not there yet.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.bundle.layout import MANIFEST_NAMES, locate
from checker.bundle.paths import BundlePathError, resolve_inside
from checker.errors import Error, UsageError
from checker.manifest.load import to_plain
from checker.platforms.features import produced_on
from checker.preprocess.running import rebuild_file
from checker.readers.tensors import stream_calls
from checker.release.casefit import check_fit, declared_entries
from checker.release.tree import (
    DEFAULT_NAME,
    block,
    block_seq,
    drop_note,
    flow_map,
    flow_seq,
    read_tree,
    release_name,
    schema_comment,
    write_schema,
    write_tree,
)

if TYPE_CHECKING:
    import numpy as np

CASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
CASES_DIR = "cases"
EARLY_VERSION = "0.1.0"


class CaseError(Error):
    """The case cannot be added as given."""


@dataclass
class NewCase:
    name: str
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    raw: dict[str, Path] = field(default_factory=dict)  # input name -> the application input, anywhere on disk
    tags: list[str] = field(default_factory=list)
    # Where each array came from, as the user named it (a tensor file), for a message about it.
    input_files: dict[str, str] = field(default_factory=dict)
    expected_files: dict[str, str] = field(default_factory=dict)


@dataclass
class AddedCase:
    manifest: Path
    name: str
    files: list[str]  # bundle-relative files written
    built: list[str] = field(default_factory=list)  # inputs made from raw files by the declared preprocessing
    replaced: bool = False
    locked: bool = False  # the manifest holds a release.digest, which the new files make stale


def add_case(bundle: Path, case: NewCase, *, replace: bool = False, reference: str | None = None) -> AddedCase:
    """Store `case` in the bundle at `bundle` (a folder, made when absent, or a manifest file)."""
    _check_case(case)
    manifest = locate(bundle)
    target = manifest or _new_manifest(bundle)
    root = target.parent
    tree = read_tree(manifest) if manifest is not None else _early_tree(root)
    index = _index(tree, case.name, replace)
    if reference:
        _set_reference(tree, reference)
    _check_inputs(tree, case)
    folder = f"{CASES_DIR}/{case.name}"
    built = _build_missing(target, root, case) if manifest is not None else []
    _check_complete(case)
    _check_shapes(tree, case, built)
    used: set[str] = set()
    raw = {name: _copy_raw(root, folder, path, used) for name, path in case.raw.items()}
    files = _save(root, folder, case, used)
    entry = _entry(case, files, raw)
    _record_where(tree, entry)
    _put(tree, entry, index)
    write_tree(tree, target)
    if manifest is None:
        write_schema(root)  # the new manifest's $schema comment names it
    written = [*files["inputs"].values(), *files["expected"].values(), *raw.values()]
    locked = bool(isinstance(tree.get("release"), dict) and tree["release"].get("digest"))
    return AddedCase(target, case.name, written, built, index is not None, locked)


def _new_manifest(bundle: Path) -> Path:
    """Where a manifest is started: `bundle` when it names one, else bundle.yaml in the folder `bundle`."""
    if bundle.name in MANIFEST_NAMES:
        bundle.parent.mkdir(parents=True, exist_ok=True)
        return bundle
    if bundle.exists() and not bundle.is_dir():
        raise UsageError(f"{bundle}: not a bundle folder or a manifest")
    bundle.mkdir(parents=True, exist_ok=True)
    return bundle / DEFAULT_NAME


def _check_case(case: NewCase) -> None:
    if not CASE_NAME.match(case.name):
        raise CaseError(
            f"case name '{case.name}': use letters, digits, '.', '_' and '-' (at most 128), starting "
            "with a letter or digit; it names the case's folder"
        )
    if not case.expected:
        raise CaseError(f"case '{case.name}': give at least one expected output")
    for tag in case.tags:
        if not tag or len(tag) > 64:
            raise CaseError(f"case '{case.name}': a tag is 1 to 64 characters")


def _early_tree(root: Path) -> Any:
    """The manifest an export script starts before there is a graph: a release and its comparison cases."""
    release = block({"name": release_name(root.resolve().name), "version": EARLY_VERSION})
    tree = block({"manifest_version": 1, "release": release})
    tree.yaml_set_start_comment(
        f"{schema_comment()}\nStarted by an export script; `checker init MODEL.onnx` completes it from the graph."
    )
    return tree


def _cases(tree: Any) -> list[Any]:
    comparison = tree.get("comparison")
    cases = comparison.get("cases") if isinstance(comparison, dict) else None
    return cases if isinstance(cases, list) else []


def _index(tree: Any, name: str, replace: bool) -> int | None:
    found = next((i for i, c in enumerate(_cases(tree)) if isinstance(c, dict) and c.get("name") == name), None)
    if found is not None and not replace:
        raise CaseError(f"the bundle has a case named '{name}' already; pass --replace (replace=True) to replace it")
    return found


def _check_inputs(tree: Any, case: NewCase) -> None:
    """Names and dtypes against the declared inputs, when there are any (an export script's early manifest has none)."""
    declared = declared_entries(tree, "inputs")
    if not declared:
        return
    unknown = sorted({*case.inputs, *case.raw} - set(declared))
    if unknown:
        raise CaseError(
            f"case '{case.name}': the manifest has no input '{unknown[0]}' (its inputs: {', '.join(declared)})"
        )
    for name, array in case.inputs.items():
        dtype = declared[name].get("dtype")
        if dtype and array.dtype.name != dtype:
            raise CaseError(
                f"case '{case.name}': input '{name}' is {array.dtype.name}, the manifest declares "
                f"{dtype}: convert it (array.astype('{dtype}'))"
            )


def _streamed_inputs(data: Any) -> set[str]:
    """The inputs of the manifest being written (plain data, as `case add` edits it) that a streaming
    application feeds one chunk at a time (`preprocessing.stream` of an audio input)."""
    out = set()
    for entry in data.get("inputs", []) if isinstance(data, dict) else []:
        prep = entry.get("preprocessing") if isinstance(entry, dict) else None
        if isinstance(prep, dict) and prep.get("kind") == "audio" and prep.get("stream") is not None:
            out.add(str(entry.get("name")))
    return out


def _check_shapes(tree: Any, case: NewCase, built: list[str]) -> None:
    """Each tensor against its declared input or output: a misfit is refused here, naming its file. A case that
    feeds a streamed input holds one call per entry of a leading axis: each call's tensors must fit."""
    made = {name: f"the tensor made from {case.raw[name]}" for name in built if name in case.raw}
    inputs, expected = {**made, **case.input_files}, case.expected_files
    fed = _streamed_inputs(to_plain(tree)) & case.inputs.keys()
    ins, outs = case.inputs, case.expected
    if fed:
        _check_calls(case, fed)
        ins, outs = {n: a[0, ...] for n, a in ins.items()}, {n: a[0, ...] for n, a in outs.items()}
        inputs = {n: f"the first call of {s}" for n, s in inputs.items()}
        expected = {n: f"the first call of {s}" for n, s in expected.items()}
    check_fit(case.name, ins, declared_entries(tree, "inputs"), "input", inputs)
    check_fit(case.name, outs, declared_entries(tree, "outputs"), "output", expected)


def _check_calls(case: NewCase, fed: set[str]) -> None:
    """Every tensor of a case that feeds a streamed input holds the same number of calls."""
    calls, sizes = stream_calls({**case.inputs, **case.expected})
    if calls is None:
        names = ", ".join(repr(n) for n in sorted(fed))
        raise CaseError(
            f"case '{case.name}' feeds the streamed input {names}: every tensor holds one call per entry of a "
            f"leading axis of one length, and these have: {sizes}"
        )


def _check_complete(case: NewCase) -> None:
    if not case.inputs:
        raise CaseError(
            f"case '{case.name}': give at least one input tensor (or a raw input the declared "
            "preprocessing makes one from)"
        )


def _safe_file_name(name: str, suffix: str, used: set[str]) -> str:
    """A file name for a tensor or raw file: graph names may hold '/', ':' or spaces."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".") or "tensor"
    candidate, n = stem + suffix, 2
    while candidate.lower() in used:  # lower: the bundle may travel to a case-insensitive file system
        candidate, n = f"{stem}-{n}{suffix}", n + 1
    used.add(candidate.lower())
    return candidate


def _inside(root: Path, rel: str) -> Path:
    try:
        return resolve_inside(root, rel)
    except BundlePathError as exc:
        raise CaseError(f"cannot write '{rel}': {exc}") from exc


def _copy_raw(root: Path, folder: str, source: Path, used: set[str]) -> str:
    if not source.is_file():
        raise UsageError(f"no such raw file: {source}")
    stem, dot, suffix = source.name.rpartition(".")
    rel = f"{folder}/{_safe_file_name(stem if dot else source.name, dot + suffix if dot else '', used)}"
    target = _inside(root, rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.resolve() != target:
        shutil.copyfile(source, target)
    return rel


def _build_missing(manifest: Path, root: Path, case: NewCase) -> list[str]:
    """Tensors for raw inputs given without one, made by the declared preprocessing (and the inputs they derive)."""
    built: list[str] = []
    for name, path in case.raw.items():
        if name in case.inputs:
            continue
        if not path.is_file():
            raise UsageError(f"no such raw file: {path}")
        for made, tensor in rebuild_file(manifest, root, name, path, npz=True).items():
            if made not in case.inputs:
                case.inputs[made] = tensor
                built.append(made)
    return built


def _save(root: Path, folder: str, case: NewCase, used: set[str]) -> dict[str, dict[str, str]]:
    import numpy as np

    files: dict[str, dict[str, str]] = {"inputs": {}, "expected": {}}
    for side, arrays in (("inputs", case.inputs), ("expected", case.expected)):
        for name, array in arrays.items():
            rel = f"{folder}/{_safe_file_name(name, '.npy', used)}"
            target = _inside(root, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                np.save(target, np.ascontiguousarray(array), allow_pickle=False)
            except ValueError as exc:
                raise CaseError(
                    f"case '{case.name}': '{name}' cannot be stored as .npy without pickles ({exc})"
                ) from exc
            files[side][name] = rel
    return files


def _entry(case: NewCase, files: dict[str, dict[str, str]], raw: dict[str, str]) -> Any:
    entry = block({"name": case.name})
    if case.tags:
        entry["tags"] = flow_seq(case.tags)
    entry["inputs"] = flow_map(files["inputs"])
    entry["expected"] = flow_map(files["expected"])
    if raw:
        entry["raw"] = flow_map(raw)
    return entry


def _record_where(tree: Any, entry: Any) -> None:
    """Where the reference's outputs are stored, said once for the bundle (comparison.reference.produced_on):
    they are this machine's kernels' figures. A case stored on another machine, or with another onnxruntime,
    says so in its own `produced_on`. The CPU class stands for the features that decide the kernels."""
    record = {k: v for k, v in produced_on().items() if k != "cpu_features"}
    reference = _reference(tree)
    kept = reference.get("produced_on")
    if not isinstance(kept, dict):
        reference["produced_on"] = flow_map(record)
    elif to_plain(kept) != record:
        entry["produced_on"] = flow_map(record)


def _reference(tree: Any) -> Any:
    """comparison.reference as a block mapping, made when absent (a placeholder's note stays until it is filled)."""
    comparison = _comparison(tree)
    reference = comparison.get("reference")
    if not isinstance(reference, dict):
        reference = block()
        comparison["reference"] = reference
    if reference.fa.flow_style():
        reference.fa.set_block_style()
    return reference


def _comparison(tree: Any) -> Any:
    if not isinstance(tree.get("comparison"), dict):
        tree["comparison"] = block()
    comparison = tree["comparison"]
    if comparison.fa.flow_style():
        comparison.fa.set_block_style()
    return comparison


def _put(tree: Any, entry: Any, index: int | None) -> None:
    comparison = _comparison(tree)
    cases = comparison.get("cases")
    # Absent, or the empty placeholder: a block list takes its place, without the placeholder's note.
    if not isinstance(cases, list) or not cases:
        cases = block_seq()
        comparison["cases"] = cases
        drop_note(comparison, "cases")
    if cases.fa.flow_style():
        cases.fa.set_block_style()
    if index is None:
        cases.append(entry)
    else:
        cases[index] = entry


def _set_reference(tree: Any, description: str) -> None:
    comparison = _comparison(tree)
    reference = comparison.get("reference")
    if isinstance(reference, dict) and reference.get("description"):
        if reference["description"] != description:
            raise CaseError(
                f"comparison.reference says '{reference['description']}', not '{description}': the "
                "cases of one bundle come from one reference"
            )
        return
    reference = _reference(tree)
    if "description" in reference:
        reference["description"] = description
    else:
        reference.insert(0, "description", description)
    drop_note(comparison, "reference")
