"""Reading comparison tensors: .npy, .npz and ONNX TensorProto files, bounded and without pickles."""

from __future__ import annotations

import math
import zipfile
import zlib
from pathlib import Path
from tokenize import TokenError
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MAX_TENSOR_FILE_BYTES = 4 << 30
MAX_PROTO_BYTES = 2 << 30  # protobuf's own limit for one message
MAX_NPZ_MEMBERS = 1024
MMAP_FROM_BYTES = 64 << 10  # smaller files are read: a mapping holds a file descriptor, and 10,000 cases hold 20,000
MAX_NPZ_RATIO = 1000  # zero-filled arrays compress well, but not a thousandfold beyond a few MiB


class TensorFileError(ValueError):
    """A tensor file that cannot be read safely; the message says why."""


# What NumPy and zipfile raise on a damaged file: a .npy header is a Python literal (a zeroed or cut one
# fails in the tokenizer or the parser), and an .npz member can be corrupt, encrypted or use a compression
# method zipfile lacks.
UNREADABLE = (
    ValueError,
    OSError,
    EOFError,
    SyntaxError,
    TokenError,
    TypeError,
    OverflowError,
    RecursionError,
    zlib.error,
    RuntimeError,
    NotImplementedError,
    zipfile.BadZipFile,
)


def _check_size(path: Path) -> int:
    from checker.bundle.paths import regular_size

    try:
        size = regular_size(path)
    except OSError as exc:
        raise TensorFileError(f"{path.name} cannot be read ({exc.strerror})") from exc
    if size > MAX_TENSOR_FILE_BYTES:
        raise TensorFileError(f"{path.name} is {size} bytes; at most {MAX_TENSOR_FILE_BYTES} per tensor file")
    return size


def load_npy(path: Path) -> np.ndarray:
    import numpy as np

    size = _check_size(path)
    try:
        with path.open("rb") as fh:
            _check_header(fh, size, path.name)
        # Large files are mapped, not read: onnxruntime copies the pages it needs, so a case costs no up-front read.
        array = np.load(path, allow_pickle=False, mmap_mode="r" if size >= MMAP_FROM_BYTES else None)
    except UNREADABLE as exc:
        raise TensorFileError(f"{path.name} is not a readable .npy file without pickles ({exc})") from exc
    if not isinstance(array, np.ndarray):
        raise TensorFileError(f"{path.name} holds no array")
    return native(array)


def native(array: np.ndarray) -> np.ndarray:
    """The array in this machine's byte order: a big-endian float32 file is still float32 to the graph."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def load_npz(path: Path) -> dict[str, np.ndarray]:
    _check_size(path)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = _check_npz_members(zf, path.name)
            return {info.filename.removesuffix(".npy"): native(_npz_member(zf, info, path.name)) for info in infos}
    except TensorFileError:
        raise
    except UNREADABLE as exc:
        raise TensorFileError(f"{path.name} is not a readable .npz file without pickles ({exc})") from exc


def _check_npz_members(zf: zipfile.ZipFile, name: str) -> list[zipfile.ZipInfo]:
    infos = zf.infolist()
    if len(infos) > MAX_NPZ_MEMBERS:
        raise TensorFileError(f"{name} holds {len(infos)} arrays; at most {MAX_NPZ_MEMBERS}")
    total = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos)
    if total > MAX_TENSOR_FILE_BYTES or (total > 64 << 20 and total > MAX_NPZ_RATIO * max(packed, 1)):
        raise TensorFileError(f"{name} expands to {total} bytes from {packed}; refused")
    return infos


def _npz_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> np.ndarray:
    """One member, read only after its header proves it holds no more than the member's size.

    NumPy allocates what a member's header declares before reading it, so a tiny member declaring a
    terabyte would exhaust memory; the member's size is itself bounded above, and the zip module stops there.
    """
    import numpy as np
    from numpy.lib import format as npy

    if not info.filename.endswith(".npy") or info.is_dir():
        raise TensorFileError(f"{name}: member '{info.filename}' is not a .npy array")
    with zf.open(info) as member:
        _check_header(member, info.file_size, f"{name}: member '{info.filename}'")
    with zf.open(info) as member:
        array = npy.read_array(member, allow_pickle=False)
    if not isinstance(array, np.ndarray):
        raise TensorFileError(f"{name}: member '{info.filename}' holds no array")
    return array


MAX_NPY_HEADER_BYTES = 1 << 16  # NumPy itself refuses headers over 10,000 bytes


def _check_header(stream: IO[bytes], size: int, what: str) -> None:
    """A .npy header that declares no more data than the file holds, and no Python objects.

    NumPy allocates what a header declares before reading it, so a tiny file declaring a terabyte would
    exhaust memory (a MemoryError, not a finding) unless refused here.
    """
    import io

    from numpy.lib import format as npy

    # The header is read from a bounded copy: a version-2 header states its own length in four bytes, and
    # reading that many from the file itself would allocate them first (a MemoryError, not a finding).
    head = io.BytesIO(stream.read(min(size, MAX_NPY_HEADER_BYTES)))
    version = npy.read_magic(head)
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise TensorFileError(f"{what} is .npy format version {version[0]}.{version[1]}; only 1.0 to 3.0 exist")
    reader = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
    shape, _, dtype = reader(head)
    need = math.prod(shape) * dtype.itemsize
    if dtype.hasobject or need > size:
        said = "holds Python objects" if dtype.hasobject else f"declares {need} bytes in {size}"
        raise TensorFileError(f"{what} {said}")


def load_pb(path: Path) -> tuple[str, np.ndarray]:
    """A TensorProto file of the ONNX test-data layout: (its name, possibly empty; the array)."""
    import onnx
    from google.protobuf.message import DecodeError

    from checker.readers.wire import check_tensor_wire

    _check_size(path)
    if path.stat().st_size >= MAX_PROTO_BYTES:
        raise TensorFileError(f"{path.name} is over 2 GiB, more than one TensorProto can hold; use .npy")
    tensor = onnx.TensorProto()
    try:
        data = path.read_bytes()
        check_tensor_wire(data)
        tensor.ParseFromString(data)
    except (DecodeError, ValueError) as exc:
        raise TensorFileError(f"{path.name} is not a TensorProto that can be read safely ({exc})") from exc
    del data
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise TensorFileError(f"{path.name} refers to external data; test-data tensors must be self-contained")
    try:
        return tensor.name, _to_array(tensor)
    except KeyError as exc:
        raise TensorFileError(f"{path.name}: unknown element type {tensor.data_type}") from exc
    except (ValueError, TypeError) as exc:
        raise TensorFileError(f"{path.name}: the tensor cannot be decoded ({exc})") from exc


def _to_array(tensor: Any) -> np.ndarray:
    """The tensor's array; strings become objects, since a fixed-width string array costs its longest string
    times their count (a megabyte string among a million empty ones would ask for terabytes)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    if tensor.data_type != onnx.TensorProto.STRING or tensor.HasField("segment"):
        return numpy_helper.to_array(tensor)
    strings = np.empty(len(tensor.string_data), dtype=object)
    strings[:] = [s.decode("utf-8") for s in tensor.string_data]
    return strings.reshape(tuple(tensor.dims))
