"""The committed manifest schema is the one the typed blocks generate, byte for byte: a bound, a default or a
description is written once, in checker/manifest/model/, and the file follows it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from checker.manifest.model.generate import dumps
from checker.manifest.model.root import manifest_schema

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "schemas" / "manifest.schema.json"
SCRIPT = ROOT / "scripts" / "generate_schema.py"


def test_the_committed_schema_is_the_generated_one() -> None:
    generated = dumps(manifest_schema()).encode("utf-8")
    committed = COMMITTED.read_bytes()
    assert committed == generated, (
        "schemas/manifest.schema.json differs from what the models in checker/manifest/model/ generate: "
        "run `python scripts/generate_schema.py` and commit the file"
    )


def test_the_script_writes_the_generated_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("generate_schema", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    target = tmp_path / "manifest.schema.json"
    monkeypatch.setattr(script, "TARGET", target)
    assert script.main() == 0
    assert target.read_bytes() == dumps(manifest_schema()).encode("utf-8")


def test_a_bound_of_a_model_is_the_schema_s() -> None:
    """One definition: the bound a parser imports from the model is the one the committed schema holds."""
    from checker.manifest.model.comparison import MAX_CASES

    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert schema["properties"]["comparison"]["properties"]["cases"]["maxItems"] == MAX_CASES
