"""The outputs the docs show are outputs the schema accepts (docs/comparison.md once showed `layout` on an
output, a field the schema refuses and the comparison never reads: the rules' `batch_axis` places the batch)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from checker.manifest.schema import load, validator

DOCS = Path(__file__).resolve().parents[2] / "docs"


def shown_outputs() -> list[tuple[str, dict[str, object]]]:
    found = []
    for doc in sorted(DOCS.glob("*.md")):
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.S):
            if not block.startswith("outputs:"):
                continue
            lines = block.splitlines()[1:]
            end = next((i for i, line in enumerate(lines) if not line.startswith(" ")), len(lines))
            items = yaml.safe_load("\n".join(["outputs:", *lines[:end]]))
            found.extend((doc.name, item) for item in items["outputs"])
    return found


def test_the_docs_show_outputs() -> None:
    assert any(name == "comparison.md" for name, _ in shown_outputs())


@pytest.mark.parametrize(("doc", "output"), shown_outputs())
def test_each_output_the_docs_show_is_valid(doc: str, output: dict[str, object]) -> None:
    schema = load("manifest")["properties"]["outputs"]["items"]
    errors = [e.message for e in validator("manifest").evolve(schema=schema).iter_errors(output)]
    assert errors == [], f"{doc}: {errors}"
