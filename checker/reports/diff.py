"""What changed between two reports of the same bundles: the base branch's and this one's.

Both reports are JSON-shaped dicts (a base report may come from a file, so nothing in it is trusted:
anything of the wrong shape counts as absent). Bundles are matched by path, then by release name; rules
by identity (graph, side, output, check and slice, not their parameters: an edited threshold is one rule
whose `edits` say loosened or tightened); findings by id, file and message (not line: an edit above
a field moves it); cases by name. The result is the report's `changes` field (schemas/report.schema.json).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from checker.compare.metrics import CHECKS, RULE_LOOSER
from checker.findings import PIECES, RULES_LOOSENED, Finding, Severity
from checker.manifest.pieces import RULES
from checker.reports.model import mappings as _dicts

MAX_LISTED = 200  # findings or cases listed per kind and bundle; the rest are counted
PRINT_DIGITS = 6  # the most significant digits any rendering prints a figure with (a cosine's wording)


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
    entry["loosened"] = loosenings(entry)
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
        or any(r["moved"] or r["crossed"] or r.get("rule") for r in entry["rules"])
        or entry["findings"]["new"]
        or entry["findings"]["resolved"]
        or entry["cases"]["added"]
        or entry["cases"]["removed"]
    )


# ----- pieces


def _pieces(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[str]:
    """The pieces (and `rules`) whose digest differs; a report without piece digests (an older checker's)
    tells nothing. An older checker counted the rules in `graph` and `comparison_inputs`: against its report
    those two and `rules` are not compared, rather than credit a rule's edit to the graph."""
    old, new = base.get("piece_digests"), head.get("piece_digests")
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)):
        return []
    names: tuple[str, ...] = (*PIECES, RULES)
    if (RULES in old) != (RULES in new):
        names = tuple(p for p in names if p not in ("graph", "comparison_inputs", RULES))
    return [p for p in names if (p in old or p in new) and old.get(p) != new.get(p)]


# ----- rules


def _rules(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rules paired by identity (graph, side, output, check, slice), so an edited parameter is one rule that
    changed, not one removed and one added. Among rules of one identity, a rule whose parameters are unchanged
    pairs with its own first (two rules merely written in another order changed nothing); the rest pair in the
    order they are written."""
    heads, bases = _rule_items(head), _rule_items(base)
    paired: dict[int, int] = {}
    for exact in (True, False):
        taken = set(paired.values())
        for h, (key, (_, rule)) in enumerate(heads):
            if h in paired:
                continue
            for b, (other, (_, was)) in enumerate(bases):
                if b not in taken and other == key and (not exact or _params(was) == _params(rule)):
                    paired[h] = b
                    taken.add(b)
                    break
    out = [
        _rule(comparison, bases[paired[h]][1][1] if h in paired else None, rule)
        for h, (_, (comparison, rule)) in enumerate(heads)
    ]
    used = set(paired.values())
    out += [_rule(comparison, rule, None) for b, (_, (comparison, rule)) in enumerate(bases) if b not in used]
    return out


RuleKey = tuple[str, str, str, str, str]


def _rule_items(bundle: Mapping[str, Any]) -> list[tuple[RuleKey, tuple[Mapping[str, Any], Mapping[str, Any]]]]:
    items = []
    for comparison in _dicts(bundle.get("comparisons")):
        for rule in _dicts(comparison.get("rules")):
            tags = rule.get("tags")
            slice_ = json.dumps(sorted(str(t) for t in tags) if isinstance(tags, list) else [])
            graph, against = str(comparison.get("graph")), str(comparison.get("against"))
            identity = (graph, against, str(rule.get("output")), str(rule.get("check")), slice_)
            items.append((identity, (comparison, rule)))
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
    delta = (after - before) if before is not None and after is not None else None
    out: dict[str, Any] = {
        "graph": _str(comparison.get("graph")),
        "against": _str(comparison.get("against")),
        "output": _str(either.get("output")),
        "check": _str(either.get("check")),
        "params": dict(either["params"]) if isinstance(either.get("params"), Mapping) else {},
        "direction": "min" if either.get("direction") == "min" else "max",
        "threshold": threshold,
        "base_threshold": _number(old.get("threshold")) if old else None,
        "base": before,
        "head": after,
        "delta": delta,
        "moved": delta is not None and not same_figure(before, after),
        "base_passed": was,
        "head_passed": now,
        "crossed": crossed,
    }
    tags = either.get("tags")
    if isinstance(tags, list) and tags:
        out["tags"] = [str(t) for t in tags]
    line = either.get("line")
    if isinstance(line, int) and not isinstance(line, bool):
        out["line"] = line  # where the rule is written: the head's, or the base's for a removed one
    if old is None or new is None:
        out["rule"] = "added" if old is None else "removed"
        out["effect"] = "tightened" if old is None else "loosened"
        return out
    edits = edited_params(str(either.get("check")), old, new)
    if edits:
        out["rule"] = "edited"
        out["edits"] = edits
        out["effect"] = _overall({str(e["effect"]) for e in edits})
    return out


def same_figure(a: float | None, b: float | None) -> bool:
    """Equal as printed: a change below the figure's printing precision (cosine 0.99990368 against
    0.99990368 - 1.3e-10) is floating-point jitter, not a change since the base."""
    if a is None or b is None:
        return a is b
    return a == b or f"{a:.{PRINT_DIGITS}g}" == f"{b:.{PRINT_DIGITS}g}"


def edited_params(check: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each parameter whose value differs, with whether the change made the rule easier to pass.

    The way a parameter loosens is declared with its rule kind (compare.metrics.Check.looser); a kind or
    parameter the registry does not know (a report of another checker) is "changed", never a guess.
    """
    kind = CHECKS.get(check)
    ways = {**(kind.looser if kind else {}), **RULE_LOOSER}
    was = {**_params(old), "min_pass_rate": old.get("min_pass_rate", 1.0)}
    now = {**_params(new), "min_pass_rate": new.get("min_pass_rate", 1.0)}
    edits = []
    for name in [*was, *(k for k in now if k not in was)]:
        before, after = was.get(name), now.get(name)
        if before == after:
            continue
        edits.append({"param": name, "base": _plain(before), "head": _plain(after),
                      "effect": _effect(ways.get(name), before, after)})  # fmt: skip
    return edits


def _params(rule: Mapping[str, Any]) -> dict[str, Any]:
    params = rule.get("params")
    return {str(k): v for k, v in params.items()} if isinstance(params, Mapping) else {}


def _effect(way: str | None, before: object, after: object) -> str:
    old, new = _number(before), _number(after)
    if way is None or old is None or new is None:
        return "changed"
    looser = new > old if way == "higher" else new < old
    return "loosened" if looser else "tightened"


def _overall(effects: set[str]) -> str:
    if "loosened" in effects:
        return "loosened"  # a rule loosened in one parameter is looser, whatever else tightened
    return "tightened" if effects == {"tightened"} else "changed"


def _plain(value: object) -> object:
    """A parameter's value as JSON keeps it (a report from a file may hold anything)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _passed(rule: Mapping[str, Any] | None) -> bool | None:
    value = rule.get("passed") if rule else None
    return value if isinstance(value, bool) else None


# ----- loosening


def loosenings(entry: Mapping[str, Any]) -> list[str]:
    """Every way the head's rules got easier to pass than the base's, one sentence each, for every renderer:
    an edited parameter (`int8 logits score_drift max 0.005 → 0.05 (loosened)`), a removed rule, a removed
    case (fewer cases to pass)."""
    out = []
    for rule in _dicts(entry.get("rules")):
        name = rule_name(rule)
        if rule.get("rule") == "removed":
            out.append(f"{name} removed (loosened)")
            continue
        for edit in _dicts(rule.get("edits")):
            if edit.get("effect") == "loosened":
                values = f"{_value(edit.get('base'))} → {_value(edit.get('head'))}"
                out.append(f"{name} {edit.get('param')} {values} (loosened)")
    cases = entry.get("cases")
    removed = [str(c) for c in cases.get("removed") or []] if isinstance(cases, Mapping) else []
    if removed:
        shown = ", ".join(removed[:5]) + (f" and {len(removed) - 5} more" if len(removed) > 5 else "")
        out.append(f"{'case' if len(removed) == 1 else 'cases'} {shown} removed (loosened)")
    return out


def rule_name(rule: Mapping[str, Any]) -> str:
    """graph, side, output, check and slice: what names a rule across two reports."""
    side = " (vs baseline)" if rule.get("against") == "baseline" else ""
    tags = rule.get("tags")
    slice_ = f" [{', '.join(str(t) for t in tags)}]" if isinstance(tags, list) and tags else ""
    return f"{rule.get('graph') or '?'}{side} {rule.get('output') or '?'} {rule.get('check') or '?'}{slice_}"


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value) if not isinstance(value, str) else value


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
    """The rules of one bundle's change entry that were edited, added or removed, whose figure moved by more
    than its printing shows, or that crossed their threshold."""
    for rule in _dicts(entry.get("rules")):
        moved = rule.get("moved")
        if not isinstance(moved, bool):  # a report of an older checker: any delta at all
            moved = rule.get("delta") not in (0, 0.0, None)
        if rule.get("crossed") or rule.get("rule") or moved or (rule.get("base") is None) != (rule.get("head") is None):
            yield rule


def loosened_finding(entry: Mapping[str, Any], manifest: str | None) -> Finding | None:
    """With --fail-on-loosened (`fail-on: loosened`): one error for a bundle whose rules were loosened since
    the base, so that loosening a check to get green cannot pass unseen: a reviewer must accept the red check."""
    said = _strs(entry.get("loosened"))
    if not said:
        return None
    rules = _dicts(entry.get("rules"))
    lines = [r["line"] for r in rules if r.get("effect") == "loosened" and isinstance(r.get("line"), int)]
    shown = "; ".join(said[:5]) + (f"; and {len(said) - 5} more" if len(said) > 5 else "")
    return Finding(
        RULES_LOOSENED,
        Severity.ERROR,
        f"the rules were loosened since the base: {shown}; --fail-on-loosened fails the check while the rule "
        "stays loosened",
        file=manifest,
        line=min(lines) if lines else None,
    )


def fail_on_loosened(report: dict[str, Any]) -> None:
    """The report dict with a `rules.loosened` error on each bundle whose rules its `changes` say were
    loosened, and the verdicts made to match (`checker report diff --fail-on-loosened`, the action)."""
    entries = {str(e.get("path")): e for e in _dicts(_mapping(report.get("changes")).get("bundles"))}
    for bundle in report.get("bundles") or []:
        entry = entries.get(str(bundle.get("path"))) if isinstance(bundle, dict) else None
        if entry is None or (found := loosened_finding(entry, _str(bundle.get("manifest")))) is None:
            continue
        bundle.setdefault("findings", []).append(found.to_dict())
        bundle["status"] = report["status"] = "fail"
        head_failed(entry)


def head_failed(entry: Mapping[str, Any]) -> None:
    """The change entry's head verdict, once a rules.loosened error failed the bundle."""
    status = entry.get("status")
    if isinstance(status, dict):
        status["head"] = "fail"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _strs(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
