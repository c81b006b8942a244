"""What changed since the base report (checker.reports.diff): a loosened rule first, on the line under the
verdict; per bundle its facts, each changed rule's base and head figure, new and resolved findings; and the
bundles removed since.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.manifest.pieces import piece_label
from checker.render.escape import text
from checker.render.loosening import loosening_line, with_line
from checker.render.markdown.charts import change_chart
from checker.render.markdown.detail import View
from checker.render.markdown.words import count, number
from checker.reports.model import BundleReport
from checker.reports.parts.changes import BundleChange, Changes, Compared, RuleChange
from checker.reports.parts.values import JsonValue


def changes_by_bundle(changes: Changes | None) -> dict[str, BundleChange]:
    return changes.by_path() if changes is not None else {}


LOOSENED_SHOWN = 3  # loosenings named on the line under the verdict; the rest are counted


def loosened_first(view: View, bundles: Sequence[BundleReport] = ()) -> Iterator[str]:
    """The question a release reviewer asks first, answered under the verdict: was a check weakened to get
    green? Each loosening with its old and new value (`int8 logits score_drift max 0.005 → 0.05 (loosened)`),
    linked to the line of the manifest that says it (the rule's, or the setting's) when links are on."""
    several = len(view.changes) > 1
    manifests = {b.path: b.manifest_file for b in bundles}
    said = [
        (f"{entry.path or entry.name}: " if several else "") + _linked(item, entry, manifests.get(entry.path), view)
        for entry in view.changes.values()
        for item in entry.loosened
    ]
    if not said:
        return
    shown = "; ".join(said[:LOOSENED_SHOWN])
    more = f"; and {len(said) - LOOSENED_SHOWN} more" if len(said) > LOOSENED_SHOWN else ""
    yield f"**⚠️ Checks loosened since the base:** {shown}{more}"


def _linked(item: str, entry: BundleChange, manifest: str | None, view: View) -> str:
    line = loosening_line(item, entry)
    if line is None:
        return text(item, 200)
    path = view.links.file_path(entry.path, manifest) if view.links is not None else None
    if path is None or view.links is None:
        return text(with_line(item, entry, manifest), 300)
    return f"[{text(item, 200)}]({view.links.blob(path, line)})"


def since_base_line(bundles: list[BundleReport], view: View) -> Iterator[str]:
    """For a passing report: the change a reviewer asks about first, on one line."""
    if not view.changes:
        return
    entries = [e for b in bundles if (e := view.change(b)) is not None]
    moved = [r for e in entries for r in e.changed_rules]
    new = [e for e in entries if e.state == "new"]
    pieces = sorted({p for e in entries if e.compared is not None for p in e.compared.pieces})
    facts = []
    if moved:
        top = max(moved, key=lambda r: abs(_relative_delta(r)))
        facts.append(_rule_change_text(top) + (f" and {count(len(moved) - 1, 'more rule')}" if len(moved) > 1 else ""))
    if pieces:
        facts.append("changed: " + ", ".join(text(p.replace("_", " "), 40) for p in pieces))
    if new:
        facts.append(f"{count(len(new), 'bundle')} new")
    yield "**Since the base:** " + ("; ".join(facts) if facts else "no change in pieces, figures or findings")


def since_base_section(bundle: BundleReport, view: View) -> Iterator[str]:
    entry = view.change(bundle)
    if entry is None:
        return
    yield ""
    if entry.state == "new":
        yield "**Since the base:** 🆕 new in this change (the base has no such bundle)."
        return
    facts = _change_facts(entry)
    yield "**Since the base:** " + ("; ".join(facts) if facts else "no change in pieces, figures or findings") + "."
    rules = entry.changed_rules
    if rules and entry.compared is not None:
        yield from _change_table(rules, entry.compared)
        yield from change_chart(rules, view)
    if entry.compared is not None:
        yield from _finding_changes(entry.compared, view)


def _change_facts(entry: BundleChange) -> list[str]:
    facts = []
    if entry.status.base != entry.status.head:
        facts.append(f"was {text(entry.status.base, 20)}, now {text(entry.status.head, 20)}")
    compared = entry.compared
    if compared is None:
        return facts
    if compared.pieces:
        facts.append("changed pieces: " + ", ".join(text(piece_label(p), 80) for p in compared.pieces))
    new, resolved = len(compared.findings.new), len(compared.findings.resolved)
    if new or resolved:
        facts.append(f"{count(new, 'new finding')}, {resolved} resolved")
    for key, names in (("added", compared.cases.added), ("removed", compared.cases.removed)):
        if names:
            shown = ", ".join(text(n, 40) for n in names[:5]) + (" …" if len(names) > 5 else "")
            facts.append(f"cases {key}: {shown}")
    return facts


def _change_table(rules: list[RuleChange], compared: Compared) -> Iterator[str]:
    yield ""
    yield "| rule | base | head | change | threshold | |"
    yield "| --- | ---: | ---: | ---: | ---: | --- |"
    for r in rules[:30]:
        crossed = {"now fails": "❌ now fails", "now passes": "✅ now passes"}.get(str(r.crossed), "")
        shown = f"{r.delta:+.4g}" if r.delta is not None else "—"
        yield (
            f"| {_change_rule_name(r)} | {number(r.base)} | {number(r.head)} | {shown} "
            f"| {number(r.threshold)} | {crossed} |"
        )
    unchanged = len(compared.rules) - len(rules)
    if unchanged > 0:
        yield ""
        yield f"_{count(unchanged, 'other rule')} measured the same._"


def _change_rule_name(rule: RuleChange) -> str:
    """The rule, and how it was edited, added or removed since the base."""
    edits = [f"{e.param} {_value(e.base)} → {_value(e.head)} ({e.effect})" for e in rule.edits]
    state = {"added": " (added)", "removed": " (removed, loosened)"}.get(str(rule.rule), "")
    return text(rule.name + state + (": " + ", ".join(edits) if edits else ""), 240)


def _value(value: JsonValue) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _rule_change_text(rule: RuleChange) -> str:
    crossed = f", {text(rule.crossed, 20)}" if rule.crossed else ""
    if rule.moved is False and rule.rule:  # an edited rule measuring the same: the edit is the news
        return f"{_change_rule_name(rule)}{crossed}"
    change = f" ({rule.delta:+.3g})" if rule.delta is not None else ""
    return f"{_change_rule_name(rule)} {number(rule.base)} → {number(rule.head)}{change}{crossed}"


def _relative_delta(rule: RuleChange) -> float:
    delta, threshold = rule.delta, rule.threshold
    if rule.crossed:
        return float("inf")
    if delta is None:
        return 0.0
    return delta / threshold if threshold else delta


def _finding_changes(compared: Compared, view: View) -> Iterator[str]:
    for title, found in (("New findings", compared.findings.new), ("Resolved findings", compared.findings.resolved)):
        if not found:
            continue
        yield ""
        yield f"<details><summary>{title} ({len(found)})</summary>"
        yield ""
        for f in found[:20]:
            where = f" ({text(f.file, 120)})" if f.file is not None else ""
            message = text(f.message, view.detail.message_chars)
            yield f"- {text(f.severity, 10)} **{text(f.id, 60)}**{where}: {message}"
        yield ""
        yield "</details>"


def removed_since_base(view: View) -> Iterator[str]:
    removed = [e for e in view.changes.values() if e.state == "removed"]
    if removed:
        names = ", ".join(text(e.path or "?", 120) for e in removed[:10])
        yield f"_Since the base, removed: {names}._"
