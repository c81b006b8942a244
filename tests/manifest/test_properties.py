"""Property-based: whatever a manifest holds, verify reports findings and never raises."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from bundlekit import EXAMPLE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.context import Options
from checker.manifest.schema import load
from checker.reports.model import Report
from checker.verify import verify_bundle

BASE = yaml.safe_load((EXAMPLE / "bundle.yaml").read_text())

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.sampled_from(["../x", "/etc/passwd", "model.onnx", "cases/*", "", "a" * 300]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, sub in node.items():
            out += paths(sub, (*prefix, key))
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            out += paths(sub, (*prefix, i))
    return out


ALL_PATHS = [p for p in paths(BASE) if p]


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(ALL_PATHS))
        parent = data
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = draw(st.sampled_from(["delete", "replace", "add"]))
            if action == "delete":
                del parent[path[-1]]
            elif action == "replace":
                parent[path[-1]] = draw(values)
            elif isinstance(parent[path[-1]], dict):
                parent[path[-1]][draw(st.text(min_size=1, max_size=8))] = draw(values)
        except (KeyError, IndexError, TypeError):
            continue
    return data


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=mutated())
def test_mutated_manifests_only_give_findings(tmp_path_factory: Any, data: dict[str, Any]) -> None:
    root = tmp_path_factory.mktemp("bundle")
    shutil.copytree(EXAMPLE, root, dirs_exist_ok=True)
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    report = verify_bundle(root, Options())
    whole = Report("test", [report]).to_dict()
    jsonschema.validate(whole, load("report"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=400))
def test_arbitrary_text_only_gives_findings(tmp_path_factory: Any, text: str) -> None:
    root: Path = tmp_path_factory.mktemp("bundle")
    (root / "bundle.yaml").write_text(text)
    report = verify_bundle(root, Options())
    assert report.status() == "fail"
    assert report.findings
