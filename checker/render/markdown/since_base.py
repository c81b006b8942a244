"""What changed since the base report (checker.reports.diff): a loosened rule first, on the line under the
verdict; per bundle its facts, each changed rule's base and head figure, new and resolved findings; and the
bundles removed since.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from checker.render.escape import text
from checker.render.markdown.charts import change_chart
from checker.render.markdown.detail import View
from checker.render.markdown.words import count, is_number, number
from checker.reports.diff import changed_rules, rule_name
from checker.reports.model import mappings as _dicts


def changes_by_bundle(value: object) -> dict[str, Mapping[str, Any]]:
    if not isinstance(value, Mapping):
        return {}
    return {str(e.get("path")): e for e in _dicts(value.get("bundles"))}


def _change_for(bundle: Mapping[str, Any], view: View) -> Mapping[str, Any] | None:
    return view.changes.get(str(bundle.get("path")))


LOOSENED_SHOWN = 3  # loosenings named on the line under the verdict; the rest are counted


def loosened_first(view: View) -> Iterator[str]:
    """The question a release reviewer asks first, answered under the verdict: was a check weakened to get
    green? Each loosening with its old and new value (`int8 logits score_drift max 0.005 → 0.05 (loosened)`)."""
    several = len(view.changes) > 1
    said = [
        (f"{entry.get('path') or entry.get('name')}: " if several else "") + item  # the path: names repeat
        for entry in view.changes.values()
        for item in _strs(entry.get("loosened"))
    ]
    if not said:
        return
    shown = "; ".join(text(s, 200) for s in said[:LOOSENED_SHOWN])
    more = f"; and {len(said) - LOOSENED_SHOWN} more" if len(said) > LOOSENED_SHOWN else ""
    yield f"**⚠️ Rules loosened since the base:** {shown}{more}"


def since_base_line(bundles: list[Mapping[str, Any]], view: View) -> Iterator[str]:
    """For a passing report: the change a reviewer asks about first, on one line."""
    if not view.changes:
        return
    moved = [(b, r) for b in bundles if (e := _change_for(b, view)) for r in changed_rules(e)]
    new = [b for b in bundles if (e := _change_for(b, view)) and e.get("state") == "new"]
    pieces = sorted({str(p) for b in bundles if (e := _change_for(b, view)) for p in _strs(e.get("pieces"))})
    facts = []
    if moved:
        _, top = max(moved, key=lambda pair: abs(_relative_delta(pair[1])))
        facts.append(_rule_change_text(top) + (f" and {count(len(moved) - 1, 'more rule')}" if len(moved) > 1 else ""))
    if pieces:
        facts.append("changed: " + ", ".join(text(p.replace("_", " "), 40) for p in pieces))
    if new:
        facts.append(f"{count(len(new), 'bundle')} new")
    yield "**Since the base:** " + ("; ".join(facts) if facts else "no change in pieces, figures or findings")


def since_base_section(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    entry = _change_for(bundle, view)
    if entry is None:
        return
    yield ""
    if entry.get("state") == "new":
        yield "**Since the base:** 🆕 new in this change (the base has no such bundle)."
        return
    facts = _change_facts(entry)
    yield "**Since the base:** " + ("; ".join(facts) if facts else "no change in pieces, figures or findings") + "."
    rules = list(changed_rules(entry))
    if rules:
        yield from _change_table(rules, entry)
        yield from change_chart(rules, view)
    yield from _finding_changes(entry, view)


def _change_facts(entry: Mapping[str, Any]) -> list[str]:
    facts = []
    status = entry.get("status")
    if isinstance(status, Mapping) and status.get("base") != status.get("head"):
        facts.append(f"was {text(status.get('base'), 20)}, now {text(status.get('head'), 20)}")
    pieces = _strs(entry.get("pieces"))
    if pieces:
        facts.append("changed pieces: " + ", ".join(text(p.replace("_", " "), 40) for p in pieces))
    findings = entry.get("findings")
    if isinstance(findings, Mapping):
        new, resolved = len(_dicts(findings.get("new"))), len(_dicts(findings.get("resolved")))
        if new or resolved:
            facts.append(f"{count(new, 'new finding')}, {resolved} resolved")
    cases = entry.get("cases")
    if isinstance(cases, Mapping):
        for key in ("added", "removed"):
            names = _strs(cases.get(key))
            if names:
                shown = ", ".join(text(n, 40) for n in names[:5]) + (" …" if len(names) > 5 else "")
                facts.append(f"cases {key}: {shown}")
    return facts


def _change_table(rules: list[Mapping[str, Any]], entry: Mapping[str, Any]) -> Iterator[str]:
    yield ""
    yield "| rule | base | head | change | threshold | |"
    yield "| --- | ---: | ---: | ---: | ---: | --- |"
    for r in rules[:30]:
        crossed = {"now fails": "❌ now fails", "now passes": "✅ now passes"}.get(str(r.get("crossed")), "")
        delta = r.get("delta")
        shown = f"{float(delta):+.4g}" if is_number(delta) else "—"
        yield (
            f"| {_change_rule_name(r)} | {number(r.get('base'))} | {number(r.get('head'))} | {shown} "
            f"| {number(r.get('threshold'))} | {crossed} |"
        )
    unchanged = len(_dicts(entry.get("rules"))) - len(rules)
    if unchanged > 0:
        yield ""
        yield f"_{count(unchanged, 'other rule')} measured the same._"


def _change_rule_name(rule: Mapping[str, Any]) -> str:
    """The rule, and how it was edited, added or removed since the base."""
    edits = [
        f"{e.get('param')} {_value(e.get('base'))} → {_value(e.get('head'))} ({e.get('effect')})"
        for e in _dicts(rule.get("edits"))
    ]
    state = {"added": " (added)", "removed": " (removed, loosened)"}.get(str(rule.get("rule")), "")
    return text(rule_name(rule) + state + (": " + ", ".join(edits) if edits else ""), 240)


def _value(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _rule_change_text(rule: Mapping[str, Any]) -> str:
    delta = rule.get("delta")
    crossed = f", {text(rule['crossed'], 20)}" if rule.get("crossed") else ""
    if rule.get("moved") is False and rule.get("rule"):  # an edited rule measuring the same: the edit is the news
        return f"{_change_rule_name(rule)}{crossed}"
    change = f" ({float(delta):+.3g})" if is_number(delta) else ""
    return f"{_change_rule_name(rule)} {number(rule.get('base'))} → {number(rule.get('head'))}{change}{crossed}"


def _relative_delta(rule: Mapping[str, Any]) -> float:
    delta, threshold = rule.get("delta"), rule.get("threshold")
    if rule.get("crossed"):
        return float("inf")
    if not is_number(delta):
        return 0.0
    return float(delta) / float(threshold) if is_number(threshold) and threshold else float(delta)


def _finding_changes(entry: Mapping[str, Any], view: View) -> Iterator[str]:
    findings = entry.get("findings")
    if not isinstance(findings, Mapping):
        return
    for key, title in (("new", "New findings"), ("resolved", "Resolved findings")):
        found = _dicts(findings.get(key))
        if not found:
            continue
        yield ""
        yield f"<details><summary>{title} ({len(found)})</summary>"
        yield ""
        for f in found[:20]:
            where = f" ({text(f['file'], 120)})" if isinstance(f.get("file"), str) else ""
            message = text(f.get("message"), view.detail.message_chars)
            yield f"- {text(f.get('severity'), 10)} **{text(f.get('id'), 60)}**{where}: {message}"
        yield ""
        yield "</details>"


def removed_since_base(view: View) -> Iterator[str]:
    removed = [e for e in view.changes.values() if e.get("state") == "removed"]
    if removed:
        names = ", ".join(text(e.get("path") or "?", 120) for e in removed[:10])
        yield f"_Since the base, removed: {names}._"


def _strs(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
