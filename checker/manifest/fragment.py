"""A piece of manifest data judged as the manifest's schema judges it in place, then built into its typed block.

The preprocessing parsers read typed blocks. A manifest reaches them after the schema gate; what other callers
hand over (the steps an imported pipeline file becomes, the fields a Hugging Face config amounts to, the
block a skops file becomes, a manifest given to `checker preprocess`) is checked here against the same
definition, the generated schema of its block, with the same words as the schema findings.
"""

from __future__ import annotations

import functools
from typing import Any

from checker.manifest.load import error_messages
from checker.manifest.model.build import build_type
from checker.manifest.model.core import Keys
from checker.manifest.model.generate import schema_of


@functools.cache
def _validators(tp: Any) -> tuple[Any, Any]:
    """jsonschema-rs's validator of the type's schema (None without it), and jsonschema's, whose errors are
    worded; made once per type."""
    from jsonschema import Draft202012Validator

    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema_of(tp)}
    try:
        import jsonschema_rs

        fast = jsonschema_rs.validator_for(schema)
    except ImportError:
        fast = None
    return fast, Draft202012Validator(schema)


def problems(tp: Any, data: Any, at: Keys = ()) -> list[str]:
    """What the schema says is wrong with `data` as a value of type `tp` standing at `at`, in the schema
    findings' words (`preprocessing.steps[0].batch.repeat: 1000 is greater than the maximum of 64`)."""
    fast, slow = _validators(tp)
    if fast is not None and _surely_valid(fast, data):
        return []
    errors = sorted(slow.iter_errors(data), key=lambda e: [str(k) for k in e.absolute_path])
    return [msg for err in errors for _, msg in error_messages(err, at)]


def _surely_valid(fast: Any, data: Any) -> bool:
    try:
        return bool(fast.is_valid(data))
    except Exception:  # data Rust cannot take (a lone surrogate, an integer past 64 bits): jsonschema decides
        return False


class Refused(ValueError):
    """The data does not match its block's schema; `problems` says where and why."""

    def __init__(self, found: list[str]) -> None:
        super().__init__("; ".join(found))
        self.problems = found


def checked(tp: Any, data: Any, at: Keys = ()) -> Any:
    """`data` built as type `tp` (a block, a list of steps) once the schema finds nothing wrong with it; else
    Refused, naming every problem."""
    found = problems(tp, data, at)
    if found:
        raise Refused(found)
    return build_type(tp, data, at)
