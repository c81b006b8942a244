"""Reading comparison tensors: .npy, .npz and ONNX TensorProto files, bounded and without pickles."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

MAX_TENSOR_FILE_BYTES = 4 << 30
MAX_NPZ_MEMBERS = 1024
MAX_NPZ_RATIO = 1000  # zero-filled arrays compress well, but not a thousandfold beyond a few MiB


class TensorFileError(ValueError):
    """A tensor file that cannot be read safely; the message says why."""


def _check_size(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_TENSOR_FILE_BYTES:
        raise TensorFileError(f"{path.name} is {size} bytes; at most {MAX_TENSOR_FILE_BYTES} per tensor file")


def load_npy(path: Path) -> np.ndarray:
    import numpy as np

    _check_size(path)
    try:
        # Mapped, not read: onnxruntime copies the pages it needs, so a case costs no up-front read.
        array = np.load(path, allow_pickle=False, mmap_mode="r")
    except (ValueError, OSError, EOFError) as exc:
        raise TensorFileError(f"{path.name} is not a readable .npy file without pickles ({exc})") from exc
    if not isinstance(array, np.ndarray):
        raise TensorFileError(f"{path.name} holds no array")
    return array


def load_npz(path: Path) -> dict[str, np.ndarray]:
    import numpy as np

    _check_size(path)
    try:
        with zipfile.ZipFile(path) as zf:
            _check_npz_members(zf, path.name)
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise TensorFileError(f"{path.name} is not a readable .npz file without pickles ({exc})") from exc


def _check_npz_members(zf: zipfile.ZipFile, name: str) -> None:
    infos = zf.infolist()
    if len(infos) > MAX_NPZ_MEMBERS:
        raise TensorFileError(f"{name} holds {len(infos)} arrays; at most {MAX_NPZ_MEMBERS}")
    total = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos)
    if total > MAX_TENSOR_FILE_BYTES or (total > 64 << 20 and total > MAX_NPZ_RATIO * max(packed, 1)):
        raise TensorFileError(f"{name} expands to {total} bytes from {packed}; refused")


def load_pb(path: Path) -> tuple[str, np.ndarray]:
    """A TensorProto file of the ONNX test-data layout: (its name, possibly empty; the array)."""
    import onnx
    from google.protobuf.message import DecodeError
    from onnx import numpy_helper

    _check_size(path)
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(path.read_bytes())
    except (DecodeError, ValueError) as exc:
        raise TensorFileError(f"{path.name} is not a TensorProto ({exc})") from exc
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise TensorFileError(f"{path.name} refers to external data; test-data tensors must be self-contained")
    try:
        return tensor.name, numpy_helper.to_array(tensor)
    except (ValueError, TypeError) as exc:
        raise TensorFileError(f"{path.name}: the tensor cannot be decoded ({exc})") from exc
