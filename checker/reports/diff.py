"""What changed between two reports of the same bundles: the base branch's and this one's.

Both reports are JSON-shaped dicts (a base report may come from a file, so nothing in it is trusted:
anything of the wrong shape counts as absent). Bundles are matched by path, then by release name; rules
by graph, side, output, check and parameters; findings by id, file and message (not line: an edit above
a field moves it); cases by name. The result is the report's `changes` field (schemas/report.schema.json).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from checker.findings import PIECES
from checker.reports.model import mappings as _dicts

MAX_LISTED = 200  # findings or cases listed per kind and bundle; the rest are counted


def diff(base: Mapping[str, Any], head: Mapping[str, Any]) -> dict[str, Any]:
    """The `changes` of `head` against `base`, one entry per bundle of either, head's order first."""
    base_bundles, head_bundles = _dicts(base.get("bundles")), _dicts(head.get("bundles"))
    matched = _match(base_bundles, head_bundles)
    entries = [_bundle(matched.get(i), b) for i, b in enumerate(head_bundles)]
    used = {id(b) for b in matched.values()}
    entries += [_removed(b) for b in base_bundles if id(b) not in used]
    context = base.get("context")
    commit = context.get("head_sha") if isinstance(context, Mapping) else None
    return {
        "base": {
            "checker_version": _str(base.get("checker_version")),
            "status": _str(base.get("status")),
            "created_at": _str(base.get("created_at")),
            "commit": _str(commit),
        },
        "bundles": entries,
    }


def _match(base: list[Mapping[str, Any]], head: list[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """head index -> its base bundle: same path first, then same release name among the rest."""
    found: dict[int, Mapping[str, Any]] = {}
    free = list(base)
    for key in ("path", "name"):
        for i, bundle in enumerate(head):
            value = bundle.get(key)
            if i in found or not isinstance(value, str):
                continue
            twin = next((b for b in free if b.get(key) == value), None)
            if twin is not None:
                found[i] = twin
                free.remove(twin)
    return found


def _bundle(base: Mapping[str, Any] | None, head: Mapping[str, Any]) -> dict[str, Any]:
    entry = _identity(head, "new" if base is None else "unchanged")
    entry["status"] = {"base": _str(base.get("status")) if base else None, "head": _str(head.get("status"))}
    if base is None:
        return entry
    entry["pieces"] = _pieces(base, head)
    entry["rules"] = _rules(base, head)
    entry["findings"] = _findings(base, head)
    entry["cases"] = _cases(base, head)
    if _changed(entry):
        entry["state"] = "changed"
    return entry


def _removed(base: Mapping[str, Any]) -> dict[str, Any]:
    entry = _identity(base, "removed")
    entry["status"] = {"base": _str(base.get("status")), "head": None}
    return entry


def _identity(bundle: Mapping[str, Any], state: str) -> dict[str, Any]:
    return {"path": _str(bundle.get("path")) or "", "name": _str(bundle.get("name")), "state": state}


def _changed(entry: Mapping[str, Any]) -> bool:
    status = entry["status"]
    return bool(
        status["base"] != status["head"]
        or entry["pieces"]
        or any(r["delta"] != 0 or r["crossed"] for r in entry["rules"])
        or entry["findings"]["new"]
        or entry["findings"]["resolved"]
        or entry["cases"]["added"]
        or entry["cases"]["removed"]
    )


# ----- pieces


def _pieces(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[str]:
    """The pieces whose digest differs; a report without piece digests (an older checker's) tells nothing."""
    old, new = base.get("piece_digests"), head.get("piece_digests")
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)):
        return []
    return [p for p in PIECES if (p in old or p in new) and old.get(p) != new.get(p)]


# ----- rules


def _rules(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[dict[str, Any]]:
    old = dict(_rule_items(base))
    out = []
    for key, (comparison, rule) in _rule_items(head):
        was = old.pop(key, None)
        out.append(_rule(comparison, was[1] if was else None, rule))
    out += [_rule(comparison, rule, None) for comparison, rule in old.values()]
    return out


RuleKey = tuple[str, str, str, str, str]


def _rule_items(bundle: Mapping[str, Any]) -> list[tuple[RuleKey, tuple[Mapping[str, Any], Mapping[str, Any]]]]:
    items = []
    for comparison in _dicts(bundle.get("comparisons")):
        for rule in _dicts(comparison.get("rules")):
            params = json.dumps(rule.get("params"), sort_keys=True, default=str)
            graph, against = str(comparison.get("graph")), str(comparison.get("against"))
            key = (graph, against, str(rule.get("output")), str(rule.get("check")), params)
            items.append((key, (comparison, rule)))
    return items


def _rule(
    comparison: Mapping[str, Any], old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> dict[str, Any]:
    either = new if new is not None else old
    assert either is not None
    before, after = _number(old.get("measured")) if old else None, _number(new.get("measured")) if new else None
    was, now = _passed(old), _passed(new)
    crossed = None
    if was is True and now is False:
        crossed = "now fails"
    elif was is False and now is True:
        crossed = "now passes"
    threshold = _number(either.get("threshold"))
    return {
        "graph": _str(comparison.get("graph")),
        "against": _str(comparison.get("against")),
        "output": _str(either.get("output")),
        "check": _str(either.get("check")),
        "params": dict(either["params"]) if isinstance(either.get("params"), Mapping) else {},
        "direction": "min" if either.get("direction") == "min" else "max",
        "threshold": threshold,
        "base": before,
        "head": after,
        "delta": (after - before) if before is not None and after is not None else None,
        "base_passed": was,
        "head_passed": now,
        "crossed": crossed,
    }


def _passed(rule: Mapping[str, Any] | None) -> bool | None:
    value = rule.get("passed") if rule else None
    return value if isinstance(value, bool) else None


# ----- findings and cases


def _findings(base: Mapping[str, Any], head: Mapping[str, Any]) -> dict[str, Any]:
    old = {_finding_key(f): f for f in _dicts(base.get("findings"))}
    new = {_finding_key(f): f for f in _dicts(head.get("findings"))}
    added = [_finding(f) for k, f in new.items() if k not in old]
    resolved = [_finding(f) for k, f in old.items() if k not in new]
    return {"new": added[:MAX_LISTED], "resolved": resolved[:MAX_LISTED]}


def _finding_key(finding: Mapping[str, Any]) -> tuple[str, str, str]:
    return str(finding.get("id")), str(finding.get("file")), str(finding.get("message"))


def _finding(finding: Mapping[str, Any]) -> dict[str, Any]:
    keep = {k: finding[k] for k in ("id", "severity", "message", "file", "line") if k in finding}
    return {k: v for k, v in keep.items() if isinstance(v, (str, int)) and not isinstance(v, bool)}


def _cases(base: Mapping[str, Any], head: Mapping[str, Any]) -> dict[str, list[str]]:
    old, new = _case_names(base), _case_names(head)
    return {
        "added": [c for c in new if c not in old][:MAX_LISTED],
        "removed": [c for c in old if c not in new][:MAX_LISTED],
    }


def _case_names(bundle: Mapping[str, Any]) -> list[str]:
    """Every case a rule measured, in first-seen order."""
    seen: dict[str, None] = {}
    for comparison in _dicts(bundle.get("comparisons")):
        for rule in _dicts(comparison.get("rules")):
            cases = rule.get("cases")
            if isinstance(cases, Mapping):
                seen.update(dict.fromkeys(str(c) for c in cases))
    return list(seen)


# ----- small helpers


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def changed_rules(entry: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """The rules of one bundle's change entry whose figure moved, or that crossed their threshold."""
    for rule in _dicts(entry.get("rules")):
        if (
            rule.get("crossed")
            or rule.get("delta") not in (0, 0.0, None)
            or (rule.get("base") is None) != (rule.get("head") is None)
        ):
            yield rule
