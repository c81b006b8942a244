"""Field types many blocks share: a path inside the bundle, a digest, a tensor's name, type and shape."""

from __future__ import annotations

from typing import Annotated, Literal

from checker.manifest.model.core import S

MAX_PATH = 1024  # a bundle path's length
MAX_NAME = 4096  # a graph tensor's name (ONNX sets none; exporters make long ones)
MAX_AXES = 16
MAX_DIM = 2**31 - 1
MAX_TENSORS = 256  # inputs or outputs of one graph, and tensors of one case

BundlePath = Annotated[
    str,
    S(
        "Bundle path",
        "A path relative to the manifest's folder, using '/', that stays inside the bundle.",
        min_length=1,
        max_length=MAX_PATH,
    ),
]
Sha256 = Annotated[
    str,
    S(
        "SHA-256",
        "The file's SHA-256 as 64 lowercase hex digits; checked when present. `checker lock` writes it.",
        pattern="^[0-9a-f]{64}$",
    ),
]
TensorName = Annotated[str, S("Tensor name", "A graph input or output name.", min_length=1, max_length=MAX_NAME)]
DType = Literal[
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "bool",
    "string",
    "float8e4m3fn",
    "float8e4m3fnuz",
    "float8e5m2",
    "float8e5m2fnuz",
    "int4",
    "uint4",
]
ElementType = Annotated[DType, S("Element type", "The tensor's element type, as ONNX names it in lower case.")]
Dimension = Annotated[
    Annotated[int, S(minimum=0, maximum=MAX_DIM)] | Annotated[str, S(min_length=1, max_length=64)],
    S("Dimension", "A fixed size (>= 0) or the name of a dynamic dimension."),
]
Shape = Annotated[
    list[Dimension],
    S(
        "Shape",
        "One entry per axis: an integer fixes the size; a string names a dynamic dimension.",
        max_items=MAX_AXES,
    ),
]
