"""Loading comparison cases: .npy per tensor, one .npz per side, or ONNX test-data folders found by glob."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from checker.bundle.paths import BundlePathError
from checker.context import Case, Context
from checker.manifest import views
from checker.manifest.model.comparison import Case as CaseEntry
from checker.manifest.named import PB_NAME, test_data_folders
from checker.readers.tensors import TensorFileError, load_npy, load_npz, load_pb

if TYPE_CHECKING:
    import numpy as np


@dataclass
class Loaded:
    cases: list[Case] = field(default_factory=list)
    problems: list[tuple[str, tuple[str | int, ...]]] = field(default_factory=list)  # (message, manifest keys)


def load_cases(ctx: Context, input_names: list[str], output_names: list[str]) -> Loaded:
    loaded = Loaded()
    for entry in views.cases(ctx.spec):
        if entry.onnx_test_data is not None:
            _test_data(ctx, entry, entry.onnx_test_data, input_names, output_names, loaded)
        else:
            _stored(ctx, entry, loaded)
    return loaded


def _side(ctx: Context, value: str | dict[str, str] | None) -> tuple[dict[str, np.ndarray], list[str]]:
    """One side of a case (inputs or expected): a name -> .npy mapping, or one .npz."""
    if value is None:  # the schema requires both sides of a stored case
        return {}, []
    if isinstance(value, str):
        path = _usable(ctx, value)
        return load_npz(path, value), [value]
    arrays = {}
    for name, rel in value.items():
        arrays[name] = load_npy(_usable(ctx, rel), rel)
    return arrays, list(value.values())


def _usable(ctx: Context, rel: str) -> Path:
    path = ctx.path(rel)
    if path is None:
        raise TensorFileError(f"'{rel}' is missing or refused")
    return path


def _stored(ctx: Context, entry: CaseEntry, loaded: Loaded) -> None:
    name, where = str(entry.name), entry.at
    try:
        inputs, in_files = _side(ctx, entry.inputs)
        expected, out_files = _side(ctx, entry.expected)
    except TensorFileError as exc:
        loaded.problems.append((f"case '{name}': {exc}", where))
        return
    tags, raw, answers = views.case_tags(entry), views.case_raw(entry), views.case_answers(entry)
    loaded.cases.append(Case(name, tags, inputs, expected, raw, where, in_files + out_files, entry.label, answers))


def _test_data(
    ctx: Context, entry: CaseEntry, pattern: str, input_names: list[str], output_names: list[str], loaded: Loaded
) -> None:
    where = entry.at
    if pattern in ctx.unusable:
        return  # the files stage refused it (bundle.path)
    try:
        folders = test_data_folders(ctx.root, pattern)
    except BundlePathError as exc:
        loaded.problems.append((f"onnx_test_data '{pattern}': {exc}", (*where, "onnx_test_data")))
        return
    if not folders:
        loaded.problems.append((f"onnx_test_data '{pattern}' matches no folder", (*where, "onnx_test_data")))
    for folder in folders:
        name = f"{entry.name}/{Path(folder).name}" if entry.name else folder
        try:
            inputs = _pb_side(ctx, folder, "input", input_names)
            expected = _pb_side(ctx, folder, "output", output_names)
        except TensorFileError as exc:
            loaded.problems.append((f"case '{name}': {exc}", where))
            continue
        files = [f"{folder}/{p.name}" for p in sorted((ctx.root / folder).iterdir()) if PB_NAME.match(p.name)]
        loaded.cases.append(Case(name, list(entry.tags or ()), inputs, expected, {}, where, files))


def _pb_side(ctx: Context, folder: str, prefix: str, names: list[str]) -> dict[str, np.ndarray]:
    """input_N.pb in index order; a tensor without a name takes the graph's N-th input (or output) name."""
    found = sorted(
        (
            (int(m.group(2)), p)
            for p in (ctx.root / folder).iterdir()
            if (m := PB_NAME.match(p.name)) and m.group(1) == prefix
        ),
        key=lambda t: t[0],
    )
    out = {}
    for index, path in found:
        if path.is_symlink():  # the bundle digest leaves links out (named.test_data_files), so they are not read
            raise TensorFileError(f"'{folder}/{path.name}' is a link; ONNX test-data files must be plain files")
        tensor_name, array = load_pb(_usable(ctx, f"{folder}/{path.name}"))
        name = tensor_name or (names[index] if index < len(names) else f"{prefix}_{index}")
        out[name] = array
    return out


def iter_tensors(case: Case) -> Iterator[tuple[str, str, np.ndarray]]:
    """('inputs' | 'expected', name, array) for every tensor of a case."""
    for name, array in case.inputs.items():
        yield "inputs", name, array
    for name, array in case.expected.items():
        yield "expected", name, array
