"""The manifest as written, read without the schema: whatever a key holds, a writer or a pre-gate reader gets
the tree's own entries or an empty value, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from checker.manifest import written


@pytest.mark.parametrize("value", [None, "text", 3, {"a": 1}, []])
def test_a_key_that_holds_no_list_reads_as_no_entries(value: Any) -> None:
    assert written.entries({"outputs": value}, "outputs") == []
    assert written.items({"outputs": value}, "outputs") == []
    assert written.cases({"comparison": {"cases": value}}) == []


def test_entries_are_the_trees_own_and_skip_what_is_not_a_mapping() -> None:
    first = {"name": "a"}
    tree = {"inputs": [first, "TODO", None, {"name": "b"}]}
    found = written.entries(tree, "inputs")
    assert [e["name"] for e in found] == ["a", "b"] and found[0] is first


def test_a_block_is_the_mapping_or_empty() -> None:
    reference = {"description": "x"}
    assert written.block({"reference": reference}, "reference") is reference
    assert written.block({"reference": "TODO"}, "reference") == {}
    assert written.block("not a mapping", "reference") == {}


def test_test_data_patterns_keep_only_written_globs() -> None:
    data = {"comparison": {"cases": [{"onnx_test_data": "t/*"}, {"onnx_test_data": 3}, "x", {"name": "c"}]}}
    assert written.test_data_patterns(data) == ["t/*"]
