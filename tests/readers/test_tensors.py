"""Reading .npy files: the header numpy.save writes is read without NumPy's literal parser, and what comes back
is what np.load gives, for every dtype, shape and order; other headers go to NumPy's own parser."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from checker.readers import tensors
from checker.readers.tensors import MMAP_FROM_BYTES, load_npy

DTYPES = ["<f4", ">f8", "|u1", "|b1", "<i8", "<c8", "<U5", "|S3", "<f2", "<M8[ns]", "|V4", [("a", "<f4")]]
SHAPES = [(), (0,), (5,), (1, 3, 4, 4), (2, 3)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
def test_loads_what_np_load_gives(tmp_path: Path, dtype: object, shape: tuple[int, ...], order: str) -> None:
    rng = np.random.default_rng(0)
    want = np.asarray(rng.integers(0, 100, size=shape)).astype(dtype).copy(order=order)  # type: ignore[call-overload]
    path = tmp_path / "a.npy"
    np.save(path, want)
    got = load_npy(path)
    ref = np.load(path, allow_pickle=False)
    assert got.dtype == ref.dtype.newbyteorder("=")  # in this machine's byte order
    assert got.shape == ref.shape
    assert got.flags.f_contiguous == ref.flags.f_contiguous
    np.testing.assert_array_equal(got, ref)


def test_the_plain_header_agrees_with_numpys_parser() -> None:
    from numpy.lib import format as npy

    plain = 0
    for dtype in DTYPES:
        for shape in SHAPES:
            buffer = io.BytesIO()
            np.save(buffer, np.zeros(shape, dtype=dtype))  # type: ignore[call-overload]
            header = tensors._plain_header(buffer.getvalue())
            if header is None:
                continue
            plain += 1
            buffer.seek(0)
            npy.read_magic(buffer)
            want_shape, want_fortran, want_dtype = npy.read_array_header_1_0(buffer)
            assert (header.shape, header.fortran, header.dtype, header.offset) == (
                tuple(want_shape),
                want_fortran,
                want_dtype,
                buffer.tell(),
            )
    assert plain >= 40  # the plain numeric and string types take the quick path


def test_a_large_file_is_mapped_and_a_cut_one_refused(tmp_path: Path) -> None:
    big = np.arange(MMAP_FROM_BYTES // 4 + 100, dtype=np.float32)
    path = tmp_path / "big.npy"
    np.save(path, big)
    got = load_npy(path)
    assert isinstance(got, np.memmap)
    np.testing.assert_array_equal(got, big)
    small = tmp_path / "small.npy"
    np.save(small, np.arange(100, dtype=np.float32))
    small.write_bytes(small.read_bytes()[:-8])
    with pytest.raises(tensors.TensorFileError, match=r"small\.npy"):
        load_npy(small)


def test_a_header_numpy_would_not_write_goes_to_numpys_parser(tmp_path: Path) -> None:
    """Keys in another order are still a valid header: the quick path leaves it to NumPy's parser."""
    text = "{'shape': (2,), 'fortran_order': False, 'descr': '<f4', }"
    path = _npy_with_header(tmp_path / "odd.npy", text, b"\0" * 8)
    assert tensors._plain_header(path.read_bytes()) is None
    np.testing.assert_array_equal(load_npy(path), np.zeros(2, np.float32))


def _npy_with_header(path: Path, text: str, data: bytes) -> Path:
    text += " " * (63 - (10 + len(text)) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + data)
    return path


@pytest.mark.parametrize(
    "shape",
    ["(3)", "(03,)", "(1, 03)", "(3,,)", "(,)", "(-1,)", "(3 ,)", "(1,3)"],
)
def test_a_header_numpy_refuses_is_refused_as_numpy_refuses_it(tmp_path: Path, shape: str) -> None:
    """What np.load refuses, load_npy refuses too (and reads what it reads): the quick path takes only the
    shapes Python writes as a tuple."""
    path = _npy_with_header(
        tmp_path / "x.npy", f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}", bytes(64)
    )
    try:
        want = np.load(path, allow_pickle=False)
    except Exception:
        with pytest.raises(tensors.TensorFileError, match=r"x\.npy"):
            load_npy(path)
    else:
        np.testing.assert_array_equal(load_npy(path), want)


@pytest.mark.parametrize("descr", ["|S0", "|V0", "<U0"])
def test_elements_of_zero_bytes_are_refused_by_name(tmp_path: Path, descr: str) -> None:
    """Any shape fits in a file when its elements have no bytes: (10**18, 10**18) of them must not pass."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': (1000000000000000000, 1000000000000000000), }}"
    with pytest.raises(tensors.TensorFileError, match="zero bytes"):
        load_npy(_npy_with_header(tmp_path / "z.npy", text, b""))
