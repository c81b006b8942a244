"""Comparison tensors from a hostile bundle: .npz members and TensorProto files that lie about their size."""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from hostile import ids, messages, rewrite_manifest
from onnx import TensorProto, numpy_helper

from checker.readers.tensors import TensorFileError, load_npy, load_npz, load_pb
from checker.readers.wire import MAX_TYPED_BYTES
from checker.reports.model import BundleReport

ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data" / "pytorch-converted"


def _npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": descr, "fortran_order": False, "shape": shape})
    return out.getvalue()


def test_npz_member_that_is_not_an_array_is_a_case_finding(example: Path, verify: Callable[..., BundleReport]) -> None:
    # NumPy hands back such a member as bytes, which the case check then took for an array.
    stored = np.load(example / "cases/meadow/pixel_values.npy")
    with zipfile.ZipFile(example / "cases/meadow/inputs.npz", "w") as zf:
        zf.writestr("pixel_values.npy", _npy_bytes(stored))
        zf.writestr("notes.txt", b"not an array")
    rewrite_manifest(example, lambda d: d["comparison"]["cases"][0].update(inputs="cases/meadow/inputs.npz"))
    report = verify(example)
    assert any("member 'notes.txt' is not a .npy array" in m for m in messages(report, "comparison.case"))


def _npy_bytes(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def test_npz_member_declaring_more_than_it_holds_is_refused_before_allocating(tmp_path: Path) -> None:
    # A 228-byte member whose header asks for 40 GB: NumPy would allocate all of it before reading.
    path = tmp_path / "lie.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", _npy_header((10**6, 1000, 10)) + b"\0" * 100)
    with pytest.raises(TensorFileError, match="declares 40000000000 bytes"):
        load_npz(path)


def test_npy_declaring_more_than_it_holds_is_refused_before_allocating(tmp_path: Path) -> None:
    # A 144-byte file whose header asks for 1.2 PB: NumPy raised MemoryError (exit 3) before this check.
    path = tmp_path / "lie.npy"
    path.write_bytes(_npy_header((99999999999, 3, 32, 32)) + b"\0" * 16)
    with pytest.raises(TensorFileError, match="declares 1228799999987712 bytes in 144"):
        load_npy(path)


def test_npy_header_length_beyond_the_file_is_refused_before_allocating(tmp_path: Path) -> None:
    # Found by the fuzz campaign: version 1.16 read as 2.0 took four bytes as a 3.7 GB header length.
    path = tmp_path / "lie.npy"
    path.write_bytes(b"\x93NUMPY\x02\x00\xed[\xb4\xdd" + b"{'descr': '<f4'}" + b"\0" * 64)
    with pytest.raises(TensorFileError, match=r"not a readable \.npy file"):
        load_npy(path)
    path.write_bytes(b"\x93NUMPY\x01\x10" + b"\0" * 64)
    with pytest.raises(TensorFileError, match=r"format version 1\.16"):
        load_npy(path)


def test_npz_of_real_arrays_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.npz"
    np.savez_compressed(path, a=np.arange(6, dtype=np.float32).reshape(2, 3), b=np.zeros(0, np.int64))
    arrays = load_npz(path)
    assert arrays["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and arrays["b"].shape == (0,)


def _pb(tmp_path: Path, tensor: TensorProto) -> Path:
    path = tmp_path / "input_0.pb"
    path.write_bytes(tensor.SerializeToString())
    return path


def test_string_tensor_costs_its_strings_not_their_longest_times_their_count(tmp_path: Path) -> None:
    # A 1 MB file: one long string among 100000 empty ones once asked NumPy for 373 GiB.
    tensor = TensorProto(name="t", data_type=TensorProto.STRING, dims=[100_001])
    tensor.string_data.extend([b"a" * 1_000_000] + [b""] * 100_000)
    name, array = load_pb(_pb(tmp_path, tensor))
    assert name == "t" and array.shape == (100_001,) and array.dtype == object
    assert array[0] == "a" * 1_000_000 and array[1] == ""


def test_numbers_outside_raw_data_are_bounded_before_parsing(tmp_path: Path) -> None:
    # Packed int64 zeros cost one byte each on disk and eight once parsed, then eight more as an array.
    count = MAX_TYPED_BYTES + 1
    payload = b"\x10\x07" + b"\x3a" + _varint(count) + b"\0" * count  # data_type INT64, int64_data packed
    path = tmp_path / "input_0.pb"
    path.write_bytes(b"\x08" + _varint(count) + payload)
    with pytest.raises(TensorFileError, match="outside raw_data"):
        load_pb(path)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_unknown_element_type_is_a_tensor_file_error(tmp_path: Path) -> None:
    tensor = TensorProto(name="t", data_type=999, dims=[1], raw_data=b"\0" * 4)
    with pytest.raises(TensorFileError, match="unknown element type 999"):
        load_pb(_pb(tmp_path, tensor))


def test_real_test_data_still_loads() -> None:
    path = ONNX_DATA / "test_ReLU" / "test_data_set_0" / "input_0.pb"
    _, array = load_pb(path)
    assert np.array_equal(array, numpy_helper.to_array(onnx.load_tensor(str(path))))


def test_linked_test_data_file_is_not_read(tmp_path: Path, verify: Callable[..., BundleReport]) -> None:
    # The bundle digest leaves links out, so a linked input_0.pb would let an unlisted file change the verdict.
    root = tmp_path / "relu"
    root.mkdir()
    source = ONNX_DATA / "test_ReLU"
    (root / "model.onnx").write_bytes((source / "model.onnx").read_bytes())
    (root / "set_0").mkdir()
    (root / "set_0" / "output_0.pb").write_bytes((source / "test_data_set_0" / "output_0.pb").read_bytes())
    (root / "elsewhere.pb").write_bytes((source / "test_data_set_0" / "input_0.pb").read_bytes())
    os.symlink("../elsewhere.pb", root / "set_0" / "input_0.pb")
    (root / "bundle.yaml").write_text(_relu_manifest(), encoding="utf-8")
    report = verify(root)
    assert any("'set_0/input_0.pb' is a link" in m for m in messages(report, "comparison.case"))
    assert report.comparisons == [] and "comparison.not_run" in ids(report)


def _relu_manifest() -> str:
    return """manifest_version: 1
release: {name: relu, version: "1"}
graph: {path: model.onnx, producer: {tool: torch.onnx, version: "1"}}
inputs:
  - {name: "0", dtype: float32, shape: [2, 3, 4, 5], meaning: tensor, preprocessing: {kind: custom, description: x}}
outputs:
  - {name: "1", dtype: float32, shape: [2, 3, 4, 5], meaning: other}
runtime: {name: onnxruntime, version: ">=1.17"}
validation: {command: checker verify bundle.yaml}
comparison:
  reference: {description: PyTorch}
  cases:
    - {name: relu, tags: [edge], onnx_test_data: "set_*"}
  rules:
    - {output: "1", check: allclose}
"""
