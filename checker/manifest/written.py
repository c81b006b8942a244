"""The manifest as written, read without the schema: for the writers that fill a manifest no schema accepts yet
(`checker init`'s draft full of TODOs, `case add` on an export script's early manifest, `variant add`'s
provisional one) and for the readers that run before the schema gate (`checker plan`, the verdict store).

A key that is absent, null or of another type reads as empty here, once. The entries returned are the tree's own
(a writer may change them in place); every stage after the schema gate reads the typed manifest (model/) instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def block(node: Any, key: str) -> Mapping[str, Any]:
    """The mapping at `key` of `node`, or an empty one."""
    value = node.get(key) if isinstance(node, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def items(node: Any, key: str) -> list[Any]:
    """The list at `key` of `node`, or an empty one."""
    value = node.get(key) if isinstance(node, Mapping) else None
    return list(value) if isinstance(value, list) else []


def entries(node: Any, key: str) -> list[Any]:
    """The mappings of the list at `key` of `node` (`inputs`, `outputs`, `answers`), each the tree's own."""
    return [e for e in items(node, key) if isinstance(e, Mapping)]


def cases(data: Any) -> list[Any]:
    """`comparison.cases` as written (an entry may be anything)."""
    return items(block(data, "comparison"), "cases")


def test_data_patterns(data: Any) -> list[str]:
    """Each case's `onnx_test_data` glob, as written."""
    found = (c.get("onnx_test_data") for c in cases(data) if isinstance(c, Mapping))
    return [p for p in found if isinstance(p, str)]
