"""jsonschema-rs decides a valid manifest fast; it never calls valid a manifest that jsonschema refuses."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from bundlekit import EXAMPLE
from hypothesis import given, settings
from hypothesis import strategies as st

from checker.manifest.load import surely_valid
from checker.manifest.schema import validator

BASE = yaml.safe_load((EXAMPLE / "bundle.yaml").read_text())

leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=12)
    | st.sampled_from(["float32", "NCHW", "image", "abc\n", "a" * 200, "x" * 64, "allclose", "\ud800", 1.0, 0, -1])
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, sub in node.items():
            out += _paths(sub, (*prefix, key))
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            out += _paths(sub, (*prefix, i))
    return out


PATHS = _paths(BASE)


@st.composite
def edited(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        parent = data
        try:
            for key in path[:-1]:
                parent = parent[key]
            if draw(st.booleans()):
                parent[path[-1]] = draw(values)
            else:
                del parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
    return data


def test_the_example_is_surely_valid_and_a_broken_one_is_not() -> None:
    assert surely_valid(BASE)
    broken = copy.deepcopy(BASE)
    broken["inputs"][0]["dtype"] = "float33"
    assert not surely_valid(broken)
    assert list(validator("manifest").iter_errors(broken))


@settings(max_examples=300, deadline=None)
@given(data=edited())
def test_what_jsonschema_refuses_is_never_surely_valid(data: dict[str, Any]) -> None:
    refused = any(True for _ in validator("manifest").iter_errors(data))
    if surely_valid(data):
        assert not refused
