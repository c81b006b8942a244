"""The manifest's settings that make a check stronger or weaker, beyond the rules: one table.

Two reports of one bundle compare these (`checker report diff`, `--compare-to`), so that a change which weakens a
check is named as a loosening whatever field it is in: a preprocessing `tolerance` raised (the fidelity check lets
more through), a case's `raw:` removed (the fidelity check no longer runs on it), a declared platform, optimization
level or execution provider removed (the release is no longer judged there), a case's `label` or `tag` removed (a
task rule or a slice judges fewer cases), `runtime.fallback` from forbid to allow, a variant's `expect` lowered.
The rules themselves (a threshold, `min_pass_rate`, a rule removed, a slice narrowed) are compared rule by rule
(`reports/diff.py`); the cases removed by name.

Each setting is a key ("inputs.pixel_values.tolerance"), its value, the way it weakens and where the manifest says
it. `way` is "higher" (a larger value is weaker), "lower" (a smaller value is weaker), "present" (removing it is
weaker) or "order" (later in `ORDERS[key kind]` is weaker).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

HIGHER, LOWER, PRESENT = "higher", "lower", "present"
FALLBACK = ("forbid", "allow")  # runtime.fallback, strongest first
MAX_SETTINGS = 2000  # a manifest from a pull request: its settings listed in a report are bounded


@dataclass(frozen=True)
class Setting:
    key: str  # what a reader reads: "inputs.pixel_values.tolerance", "case dusk raw pixel_values"
    value: Any  # a JSON scalar
    way: str  # HIGHER, LOWER, PRESENT, or "fallback"
    keys: tuple[str | int, ...]  # the manifest field, for its line


def settings(data: Mapping[str, Any]) -> list[Setting]:
    """Every setting of the table that the manifest declares, at most MAX_SETTINGS."""
    out: list[Setting] = []
    for setting in _all(data):
        out.append(setting)
        if len(out) >= MAX_SETTINGS:
            break
    return out


def _all(data: Mapping[str, Any]) -> Iterator[Setting]:
    for i, entry in enumerate(_list(data.get("inputs"))):
        prep = _dict(_dict(entry).get("preprocessing"))
        name = _name(entry, i)
        if _number(prep.get("tolerance")):
            where = ("inputs", i, "preprocessing", "tolerance")
            yield Setting(f"inputs.{name}.tolerance", prep["tolerance"], HIGHER, where)
    runtime = _dict(data.get("runtime"))
    for i, platform in enumerate(_list(runtime.get("platforms"))):
        platform = _dict(platform)
        name = platform.get("name") or "/".join(str(platform.get(k)) for k in ("arch", "cpu") if platform.get(k))
        yield Setting(f"runtime.platforms {name or i}", True, PRESENT, ("runtime", "platforms", i))
    for i, level in enumerate(_list(runtime.get("optimization_levels"))):
        yield Setting(f"runtime.optimization_levels {level}", True, PRESENT, ("runtime", "optimization_levels", i))
    for i, provider in enumerate(_list(runtime.get("execution_providers"))):
        yield Setting(f"runtime.execution_providers {provider}", True, PRESENT, ("runtime", "execution_providers", i))
    if runtime.get("fallback") in FALLBACK:
        yield Setting("runtime.fallback", runtime["fallback"], "fallback", ("runtime", "fallback"))
    comparison = _dict(data.get("comparison"))
    for i, case in enumerate(_list(comparison.get("cases"))):
        case = _dict(case)
        case_name = case.get("name")
        if not isinstance(case_name, str):
            continue  # a glob of ONNX test data: its cases have no manifest fields of their own
        for target in _dict(case.get("raw")):
            yield Setting(f"case {case_name} raw {target}", True, PRESENT, ("comparison", "cases", i, "raw"))
        if case.get("label") is not None:
            yield Setting(f"case {case_name} label", True, PRESENT, ("comparison", "cases", i, "label"))
        for tag in _list(case.get("tags")):
            yield Setting(f"case {case_name} tag {tag}", True, PRESENT, ("comparison", "cases", i, "tags"))
    for i, variant in enumerate(_list(data.get("variants"))):
        expect = _dict(_dict(variant).get("expect"))
        for field in ("smaller", "faster"):
            if _number(expect.get(field)):
                key = f"variant {_name(variant, i)} expect.{field}"
                yield Setting(key, expect[field], LOWER, ("variants", i, "expect", field))


def weaker(way: str, before: Any, after: Any) -> bool | None:
    """Whether `after` weakens the check `before` made (None: not comparable, say "changed")."""
    if way == "fallback":
        if before in FALLBACK and after in FALLBACK:
            return FALLBACK.index(after) > FALLBACK.index(before)
        return None
    if not (_number(before) and _number(after)):
        return None
    return bool(after > before) if way == HIGHER else bool(after < before)


def _name(entry: object, i: int) -> str:
    name = _dict(entry).get("name")
    return name if isinstance(name, str) and name else f"#{i}"


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
