"""`NAME=FILE` arguments of `checker case add`, and the tensor files they name (.npy, .npz, ONNX .pb)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from checker.errors import UsageError
from checker.readers.tensors import TensorFileError, load_npy, load_npz, load_pb

if TYPE_CHECKING:
    import numpy as np


def pairs(values: list[str], flag: str) -> dict[str, Path]:
    """{NAME: FILE} from ["NAME=FILE", ...]; a tensor name rarely holds '=', a path may, so the first one splits."""
    out: dict[str, Path] = {}
    for value in values:
        name, sep, file = value.partition("=")
        if not sep or not name or not file:
            raise UsageError(f"{flag} {value}: expected NAME=FILE")
        if name in out:
            raise UsageError(f"{flag}: '{name}' is given twice")
        out[name] = Path(file)
    return out


def load_tensors(files: dict[str, Path]) -> dict[str, np.ndarray]:
    return {name: load_tensor(name, path) for name, path in files.items()}


def load_tensor(name: str, path: Path) -> np.ndarray:
    if not path.is_file():
        raise UsageError(f"no such tensor file: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return load_npy(path)
        if suffix == ".pb":
            return load_pb(path)[1]
        if suffix == ".npz":
            return _from_npz(name, path, load_npz(path))
    except TensorFileError as exc:
        raise UsageError(f"'{name}': {exc}") from exc
    raise UsageError(f"'{name}': {path} is not a .npy, .npz or .pb tensor file")


def _from_npz(name: str, path: Path, arrays: dict[str, np.ndarray]) -> np.ndarray:
    if name in arrays:
        return arrays[name]
    if len(arrays) == 1:
        return next(iter(arrays.values()))
    raise UsageError(f"'{name}': {path} holds {', '.join(sorted(arrays)) or 'no arrays'}, not '{name}'")
