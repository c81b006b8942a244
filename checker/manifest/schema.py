"""The JSON Schemas shipped with the package, loaded once."""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any


def schema_dir() -> Path:
    """Installed wheels carry the schemas inside the package; a source checkout keeps them at its root."""
    packaged = Path(str(resources.files("checker"))) / "schemas"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "schemas"


# The schema's copy that `checker init` writes beside the manifest, so editors resolve `$schema` offline.
SCHEMA_FILE = "manifest.schema.json"


def schema_text(name: str) -> str:
    return (schema_dir() / f"{name}.schema.json").read_text(encoding="utf-8")


@functools.cache
def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((schema_dir() / f"{name}.schema.json").read_text(encoding="utf-8"))
    return data


@functools.cache
def validator(name: str) -> Any:
    from jsonschema import Draft202012Validator  # slow to import: only an invalid manifest or a report needs it

    return Draft202012Validator(load(name))


@functools.cache
def fast_validator(name: str) -> Any:
    """jsonschema-rs's validator for the same schema: it decides in microseconds what jsonschema takes a
    millisecond a case for; None without it."""
    try:
        import jsonschema_rs  # not for `checker --help`, which validates nothing
    except ImportError:
        return None
    return jsonschema_rs.validator_for(load(name))
