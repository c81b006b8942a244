"""How a report's values are written as JSON and read back: figures that are not finite numbers, text no
renderer could encode, and the small readers the parts' `from_dict` share.

A report file is checked against schemas/report.schema.json before anything reads it, so the readers trust its
shape where the schema states one; where it states none (an old checker's report, a part the schema leaves
open), they take a value only when it has the type the part needs.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import math
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeAlias, TypeVar, cast

from checker.findings import printable_text

# How a figure that is not a finite number is written in the JSON report (JSON has no such numbers).
NON_FINITE = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}

# A value as JSON holds it: a rule's parameters, as the manifest writes them, are a mapping of these.
JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None

_T = TypeVar("_T")


def printable_tree(value: Any) -> Any:
    """Plain report data with every string printable: a lone surrogate (from a file name that is not UTF-8)
    is written as `\\udXXX`, since no renderer could encode it."""
    if isinstance(value, str):
        return printable_text(value)
    if isinstance(value, dict):
        return {printable_tree(k): printable_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_tree(v) for v in value]
    return value


def json_figures(value: Any) -> Any:
    """Report data as JSON can hold it: a non-finite float becomes the string "inf", "-inf" or "nan"
    (docs/manifest.md, "The report"; the report schema admits these strings wherever a figure may stand)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_figures(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_figures(v) for v in value]
    return value


def figure(value: Any) -> float | None:
    """A figure read back from JSON: "inf", "-inf" and "nan" stand for the non-finite floats (json_figures)."""
    if value is None:
        return None
    return NON_FINITE[value] if isinstance(value, str) else float(value)


def number(value: Any) -> float | None:
    """A figure read back as it was written: an integer stays one (a report written again from it reads the same)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return figure(value)


def number_or(value: Any, default: float) -> float:
    found = number(value)
    return default if found is None else found


def figures(value: Mapping[str, Any] | None) -> dict[str, float | None]:
    return {str(k): figure(v) for k, v in (value or {}).items()}


def mappings(value: object) -> list[Mapping[str, Any]]:
    """The mappings of a list in a report read back from JSON; anything else in it is skipped, not trusted."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def text(value: object) -> str | None:
    """A string of the report, or None when the value is none (absent, null or of another type)."""
    return value if isinstance(value, str) else None


def integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def json_value(value: object) -> JsonValue:
    """A value read from JSON, as JSON holds it (a tuple becomes a list, any other object its text)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


def each_string(
    value: _T, change: Callable[[str], str], *, keep: Collection[str] = (), deepest: int | None = None
) -> _T:
    """A report or a part of it with `change` applied to every string, dictionary keys included: the typed
    counterpart of printable_tree, for the renderers. A record's fields named in `keep` are left as they are (a
    mapping's values under keys of those names are not: a report's free-form values are all changed); with
    `deepest`, a list or mapping nested deeper than that (in a finding's free-form details) becomes "…", since
    nothing shown lies so deep. What `change` leaves as it is stays the very object (most text needs nothing);
    a record with a changed field is copied field by field, not rebuilt, so that nothing its constructor does
    (a finding bounds its message) runs again."""
    memo: dict[str, str] = {}

    def once(text: str) -> str:  # a report of hundreds of bundles repeats its strings: each is changed once
        out = memo.get(text)
        if out is None:
            out = memo[text] = change(text)
        return text if out == text else out  # unchanged text stays the very object, as said above

    return cast(_T, _each(value, once, frozenset(keep), deepest, 0))


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...] | None:
    """A record's field names, or None for a value that is no dataclass."""
    if kind not in _FIELDS:
        if not dataclasses.is_dataclass(kind):
            return None
        _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return _FIELDS[kind]


def _each(value: object, change: Callable[[str], str], keep: frozenset[str], deepest: int | None, depth: int) -> object:
    if isinstance(value, str):
        return value if isinstance(value, enum.Enum) else change(value)
    if value is None or isinstance(value, (bool, int, float, enum.Enum)):
        return value
    names = None if isinstance(value, (dict, list)) else _fields(type(value))
    if names is None and not isinstance(value, (dict, list)):
        return value
    if deepest is not None and depth > deepest:
        return "…"
    if isinstance(value, list):
        items = [_each(v, change, keep, deepest, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    if isinstance(value, dict):
        pairs = [
            (change(k) if isinstance(k, str) else k, _each(v, change, keep, deepest, depth + 1))
            for k, v in value.items()
        ]
        same = all(k is k2 and v is v2 for (k, v), (k2, v2) in zip(pairs, value.items()))
        return value if same else dict(pairs)
    assert names is not None
    changed = {}
    for name in names:
        if name not in keep:
            old = getattr(value, name)
            new = _each(old, change, keep, deepest, depth + 1)
            if new is not old:
                changed[name] = new
    if not changed:
        return value
    out = copy.copy(value)
    for name, new in changed.items():
        object.__setattr__(out, name, new)
    return out
