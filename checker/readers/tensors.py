"""Reading comparison tensors: .npy, .npz and ONNX TensorProto files, bounded and without pickles."""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from tokenize import TokenError
from typing import IO, TYPE_CHECKING, Any, Literal

from checker.bundle.paths import regular_size

if TYPE_CHECKING:
    import zipfile

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
# method zipfile lacks (with zipfile.BadZipFile, which load_npz adds: zipfile loads only for an .npz).
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
)


def _check_size(path: Path, shown: str | None = None) -> int:
    try:
        size = regular_size(path)
    except OSError as exc:
        raise TensorFileError(f"{shown or path.name} cannot be read ({exc.strerror})") from exc
    if size > MAX_TENSOR_FILE_BYTES:
        raise TensorFileError(f"{shown or path.name} is {size} bytes; at most {MAX_TENSOR_FILE_BYTES} per tensor file")
    return size


def reason(exc: BaseException) -> str:
    """Why NumPy could not read a file, in words: a damaged header fails in Python's tokenizer or parser,
    whose raw exception (`('EOF in multi-line statement', (3, 0))`) says nothing to the reader."""
    if isinstance(exc, TokenError | SyntaxError):
        return "its header is not the Python literal a .npy header is (damaged or cut short)"
    return str(exc) or type(exc).__name__


def load_npy(path: Path, shown: str | None = None) -> np.ndarray:
    """The array in a .npy file; `shown` is how messages name the file (its bundle-relative path)."""
    import numpy as np

    what = shown or path.name
    size = _check_size(path, what)
    try:
        with path.open("rb") as fh:
            header = _check_header(fh, size, what)
            count = math.prod(header.shape)
            order: Literal["C", "F"] = "F" if header.fortran else "C"
            array: np.ndarray
            if size >= MMAP_FROM_BYTES and count:
                # Large files are mapped, not read: onnxruntime copies the pages it needs, so a case costs no
                # up-front read.
                array = np.memmap(path, header.dtype, "r", header.offset, header.shape, order)
            else:  # the rest of the file, read once: the header is parsed here, not again by np.load
                fh.seek(header.offset)
                data = bytearray(count * header.dtype.itemsize)
                if fh.readinto(data) != len(data):
                    raise EOFError("the file ends before its data")
                array = np.frombuffer(data, header.dtype, count).reshape(header.shape, order=order)
    except UNREADABLE as exc:
        raise TensorFileError(f"{what} is not a readable .npy file without pickles: {reason(exc)}") from exc
    return native(array)


def native(array: np.ndarray) -> np.ndarray:
    """The array in this machine's byte order: a big-endian float32 file is still float32 to the graph."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def load_npz(path: Path, shown: str | None = None) -> dict[str, np.ndarray]:
    """The arrays in an .npz file; `shown` is how messages name the file (its bundle-relative path)."""
    import zipfile

    what = shown or path.name
    _check_size(path, what)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = _check_npz_members(zf, what)
            return {info.filename.removesuffix(".npy"): native(_npz_member(zf, info, what)) for info in infos}
    except TensorFileError:
        raise
    except (*UNREADABLE, zipfile.BadZipFile) as exc:
        raise TensorFileError(f"{what} is not a readable .npz file without pickles: {reason(exc)}") from exc


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


@dataclass(frozen=True)
class NpyHeader:
    shape: tuple[int, ...]
    fortran: bool
    dtype: np.dtype[Any]
    offset: int  # where the data starts


def _check_header(stream: IO[bytes], size: int, what: str) -> NpyHeader:
    """A .npy header that declares no more data than the file holds, and no Python objects.

    NumPy allocates what a header declares before reading it, so a tiny file declaring a terabyte would
    exhaust memory (a MemoryError, not a finding) unless refused here.
    """
    import io

    # The header is read from a bounded copy: a version-2 header states its own length in four bytes, and
    # reading that many from the file itself would allocate them first (a MemoryError, not a finding).
    data = stream.read(min(size, MAX_NPY_HEADER_BYTES))
    header = _plain_header(data)
    if header is None:
        from numpy.lib import format as npy

        head = io.BytesIO(data)
        version = npy.read_magic(head)
        if version not in ((1, 0), (2, 0), (3, 0)):
            raise TensorFileError(f"{what} is .npy format version {version[0]}.{version[1]}; only 1.0 to 3.0 exist")
        reader = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, fortran, dtype = reader(head)
        header = NpyHeader(tuple(shape), bool(fortran), dtype, head.tell())
    if header.dtype.itemsize == 0:  # no ONNX element type has zero bytes, and any shape would fit in the file
        raise TensorFileError(f"{what} holds elements of zero bytes ({header.dtype}), which no tensor has")
    need = math.prod(header.shape) * header.dtype.itemsize
    if header.dtype.hasobject or need > size:
        said = "holds Python objects" if header.dtype.hasobject else f"declares {need} bytes in {size}"
        raise TensorFileError(f"{what} {said}")
    return header


# The header numpy.save writes for a plain array, read without NumPy's parser, which compiles the header as a
# Python literal: that cost a bundle of 10,000 cases two seconds. Any other header goes to NumPy's parser.
_PLAIN_HEADER = re.compile(
    r"\{'descr': '([<>|]?[a-zA-Z][0-9]{0,2})', 'fortran_order': (True|False), "
    r"'shape': \((|(?:0|[1-9][0-9]{0,17}),|(?:0|[1-9][0-9]{0,17})(?:, (?:0|[1-9][0-9]{0,17}))+)\), \} *\n"
)  # a shape as Python writes a tuple: (), (5,), (1, 3); `(5)` is an int and `05` no literal, as NumPy says


def _plain_header(data: bytes) -> NpyHeader | None:
    if data[:8] != b"\x93NUMPY\x01\x00" or len(data) < 10:
        return None
    end = 10 + int.from_bytes(data[8:10], "little")
    match = _PLAIN_HEADER.fullmatch(data[10:end].decode("latin-1"))
    if match is None or end > len(data):
        return None
    import numpy as np

    descr, fortran, dims = match.groups()
    try:
        dtype = np.dtype(descr)
    except TypeError:
        return None
    shape = tuple(int(d) for d in dims.replace(",", " ").split())
    return NpyHeader(shape, fortran == "True", dtype, end)


def load_pb(path: Path) -> tuple[str, np.ndarray]:
    """A TensorProto file of the ONNX test-data layout: (its name, possibly empty; the array)."""
    import onnx
    from google.protobuf.message import DecodeError

    from checker.readers.wire import check_tensor_wire  # .pb files only, like onnx above: a plain run loads neither

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


def stream_calls(arrays: dict[str, np.ndarray]) -> tuple[int | None, str]:
    """The number of calls a streamed case's tensors hold on their one shared leading axis (None when the axes
    differ, or one is a scalar), and each tensor's leading axis in words for a message that says so."""
    lead = {name: int(a.shape[0]) if a.ndim else 0 for name, a in arrays.items()}
    sizes = ", ".join(f"'{n}' {size}" if arrays[n].ndim else f"'{n}' none (a scalar)" for n, size in lead.items())
    shared = set(lead.values())
    return (shared.pop() if len(shared) == 1 and min(lead.values()) > 0 else None), sizes
