"""The shipped schemas: valid JSON Schema 2020-12, every field explained, and the example valid against it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from bundlekit import EXAMPLE
from jsonschema import Draft202012Validator

from checker.manifest.schema import load


def properties(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            yield f"{path}/{name}", sub
        for key, sub in node.items():
            yield from properties(sub, path if key == "properties" else f"{path}/{key}")
    elif isinstance(node, list):
        for item in node:
            yield from properties(item, path)


@pytest.mark.parametrize("name", ["manifest", "report"])
def test_schema_is_valid_and_documented(name: str) -> None:
    schema = load(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] and schema["title"]
    undocumented = [
        p
        for p, sub in properties(schema)
        if isinstance(sub, dict)
        and "$ref" not in sub
        and not ({"title", "description"} <= set(sub) or set(sub) <= {"type", "enum", "const"})
    ]
    assert undocumented == []


def test_example_manifest_is_valid() -> None:
    data = yaml.safe_load((EXAMPLE / "bundle.yaml").read_text())
    assert list(Draft202012Validator(load("manifest")).iter_errors(data)) == []


def test_support_table_covers_the_installed_onnxruntime() -> None:
    from importlib import metadata

    from packaging.version import Version

    from checker.readers.support import releases

    installed = Version(metadata.version("onnxruntime"))
    newest = releases()[-1].version
    assert (newest.major, newest.minor) >= (installed.major, installed.minor), (
        f"checker/data/onnxruntime-support.csv ends at {newest}; measure onnxruntime {installed} and add it"
    )


def test_the_readme_manifest_is_valid() -> None:
    from bundlekit import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("## A manifest, in short")[1].split("```yaml")[1].split("```")[0]
    data = yaml.safe_load(block)
    assert [e.message for e in Draft202012Validator(load("manifest")).iter_errors(data)] == []
    assert {"graph", "inputs", "outputs", "runtime", "validation", "comparison", "variants"} <= set(data)
