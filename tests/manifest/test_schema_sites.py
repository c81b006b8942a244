"""jsonschema asked only at the sites jsonschema-rs found: the same errors, words and order as its whole walk.

The corpus: the example's manifest with fields deleted, replaced and added (hostile values, keys named "" that
Rust leaves out of its paths), and shapes written to reach each kind of site. A manifest of thousands of errors
lists the first `MAX_ERRORS` sites' and says there are more.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from bundlekit import EXAMPLE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.manifest import schemaerrors
from checker.manifest.load import Manifest, load_manifest, schema_findings
from checker.manifest.schema import validator
from checker.manifest.schemaerrors import schema_errors

BASE: dict[str, Any] = yaml.safe_load((EXAMPLE / "bundle.yaml").read_text(encoding="utf-8"))


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, sub in node.items():
            out += paths(sub, (*prefix, key))
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            out += paths(sub, (*prefix, i))
    return out


PATHS = paths(BASE)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "baseline", "x" * 5000, "RGB", "float32", "allclose", "../x", "image", "NCHW", "a/b.npy"]),
    st.text(max_size=6),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["", "x", "name", "kind"]), inner),
    max_leaves=6,
)


def whole_walk(data: Any) -> list[Any]:
    return sorted(validator("manifest").iter_errors(data), key=lambda e: list(e.absolute_path))


def described(errors: list[Any]) -> list[tuple[Any, ...]]:
    return [(list(e.absolute_path), e.message, e.validator) for e in errors]


def findings(data: Any, whole: bool) -> list[tuple[str, str]]:
    """The manifest's schema findings, from the sites or (as without jsonschema-rs) from the whole walk."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        if whole:
            monkeypatch.setattr(schemaerrors, "_sites", no_sites)
        return [(f.id, f.message) for f in schema_findings(Manifest(data, "bundle.yaml"))]


def no_sites(data: Any, name: str) -> Any:
    raise schemaerrors.NoSites


def assert_same(data: Any) -> None:
    data = json.loads(json.dumps(data))  # as a manifest holds it: text keys
    errors, more = schema_errors(data)
    assert not more
    assert described(errors) == described(whole_walk(data))
    assert findings(data, whole=False) == findings(data, whole=True)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_manifests_get_the_whole_walks_errors(data: st.DataObject) -> None:
    manifest = copy.deepcopy(BASE)
    for _ in range(data.draw(st.integers(1, 6))):
        path = data.draw(st.sampled_from(PATHS))
        parent: Any = manifest
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = data.draw(st.sampled_from(["delete", "replace", "replace", "add"]))
            if action == "delete":
                del parent[path[-1]]
            elif action == "replace":
                parent[path[-1]] = data.draw(VALUES)
            elif isinstance(parent, dict):
                parent[data.draw(st.sampled_from(["", "x", "kind", "pad"]))] = data.draw(VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    assert_same(manifest)


def edited(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        *head, last = [int(k) if k.isdigit() else k for k in dotted.split("__")]
        node: Any = data
        for key in head:
            node = node[key]
        node[last] = value
    return data


SHAPES = {
    "an enum and a type": edited(outputs__0__meaning="logit", graph__path=3),
    "an unknown field, with its hint": edited(release__nmae="x"),
    "required fields of a variant": edited(variants=[{"name": "baseline", "path": "m.onnx"}]),
    "anyOf and oneOf": edited(
        inputs__0__preprocessing__resize__size="x", outputs__0__labels={"path": "a", "metadata_key": "b"}
    ),
    "an if-then branch's field": edited(inputs__0__preprocessing__bogus=1, inputs__0__preprocessing__color="RGBA"),
    "a property named ''": edited(comparison__cases__0__raw={"": None, "pixel_values": 5}),
    "under a property named ''": edited(comparison__cases__0__inputs={"": {"x": 1}}),
    "a top-level field missing": {k: v for k, v in BASE.items() if k != "release"},
    "a list too long": edited(outputs=[BASE["outputs"][0]] * 300),
    "not an object": edited(comparison=[1, 2]),
}


@pytest.mark.parametrize("data", SHAPES.values(), ids=SHAPES.keys())
def test_each_kind_of_site_gets_the_whole_walks_errors(data: dict[str, Any]) -> None:
    assert whole_walk(data)
    assert_same(data)


class Recording:
    """jsonschema's validator, recording each whole walk."""

    def __init__(self, real: Any) -> None:
        self.real, self.walked = real, []

    def iter_errors(self, data: Any) -> Any:
        self.walked.append(data)
        return self.real.iter_errors(data)

    def evolve(self, **changes: Any) -> Any:
        return self.real.evolve(**changes)


def test_a_keyword_whose_verdict_needs_its_siblings_walks_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    data = edited(outputs__0__meaning="logit", graph__path=3)
    recording = Recording(validator("manifest"))
    monkeypatch.setattr(schemaerrors, "validator", lambda name: recording)
    assert described(schema_errors(data)[0]) == described(whole_walk(data)) and recording.walked == []
    monkeypatch.setattr(schemaerrors, "_ALONE", frozenset({"type"}))  # as if `enum` needed what its siblings saw
    assert described(schema_errors(data)[0]) == described(whole_walk(data)) and recording.walked == [data]


def test_thousands_of_errors_list_the_first_and_say_there_are_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schemaerrors, "MAX_ERRORS", 50)
    data = copy.deepcopy(BASE)
    data["comparison"]["cases"] = [{"name": f"c{i}", "inputs": {"x": 1}, "tags": "x"} for i in range(300)]
    path = tmp_path / "bundle.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    manifest, found = load_manifest(path)
    assert manifest is not None
    listed, more = found[:-1], found[-1]
    assert 50 <= len(listed) < 300 and more.message.startswith("more schema errors than the ") and more.line is None
    lines = [f.line for f in listed]
    assert None not in lines and lines == sorted(lines)  # the first cases' errors, in the manifest's order
    assert {f.message.split(":")[0] for f in listed} >= {"comparison.cases[0].inputs", "comparison.cases[0].tags"}
