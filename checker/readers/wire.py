"""A bound on a serialized TensorProto, read from its wire format before protobuf parses it.

Parsing can cost far more memory than the file: a packed repeated int64 of zeros spends one byte per element
on disk and eight in memory, and a million tiny strings cost a Python object each. Writers store numeric
tensors in `raw_data` (one byte in memory per byte on disk), so the typed fields only need to be small.
"""

from __future__ import annotations

# TensorProto fields that hold numbers one element at a time: dims, float, int32, int64, double, uint64.
TYPED_FIELDS = frozenset({1, 4, 5, 7, 10, 11})
MAX_FIELDS = 1 << 20  # top-level fields: dims, one per string of a string tensor, ...
MAX_TYPED_BYTES = 64 << 20  # at most eight times this in memory once parsed


class WireError(ValueError):
    """A serialized message that is malformed or too costly to parse; the message says why."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise WireError("a truncated or overlong varint")


def _field(data: bytes, pos: int) -> tuple[int, int, int]:
    """(field number, bytes its value takes in memory at most, position after it)."""
    key, pos = _varint(data, pos)
    wire = key & 7
    if wire == 0:
        _, pos = _varint(data, pos)
        return key >> 3, 8, pos
    widths = {1: 8, 5: 4}
    if wire == 2:
        width, pos = _varint(data, pos)
    elif wire in widths:
        width = widths[wire]
    else:
        raise WireError(f"wire type {wire}, which a TensorProto does not use")
    if pos + width > len(data):
        raise WireError("a field runs past the end of the file")
    return key >> 3, width, pos + width


def check_tensor_wire(data: bytes) -> None:
    """Raise WireError unless `data` has few top-level fields and little data outside `raw_data`."""
    pos = fields = typed = 0
    while pos < len(data):
        number, width, pos = _field(data, pos)
        fields += 1
        typed += width if number in TYPED_FIELDS else 0
        if fields > MAX_FIELDS:
            raise WireError(f"more than {MAX_FIELDS} fields (a string tensor of that many strings)")
        if typed > MAX_TYPED_BYTES:
            raise WireError(f"more than {MAX_TYPED_BYTES} bytes of numbers outside raw_data; store them in raw_data")
