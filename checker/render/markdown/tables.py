"""The comparison tables: per graph, its rules with measured against threshold, the per-case figures of
the failing rules, and key-value details (a diagnosis).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from checker.render.escape import text
from checker.render.markdown.detail import Cuts, Detail
from checker.render.markdown.words import VERDICTS, is_number, number, status_mark
from checker.render.slices import rule_scope
from checker.reports.model import mappings as _dicts


def comparison_section(comparison: Mapping[str, Any], detail: Detail, cuts: Cuts) -> Iterator[str]:
    graph = text(comparison.get("graph") or "?", 80)
    against = text(comparison.get("against") or "?", 40)
    status = comparison.get("status")
    label = VERDICTS.get(str(status), text(status, 20))
    yield ""
    yield f"#### {status_mark(status)} {graph} against the {against}: {label}"
    if comparison.get("skipped"):
        yield ""
        yield text(comparison["skipped"], detail.message_chars)
    faulty = [str(n) for n in comparison.get("case_errors") or []]
    if faulty:
        yield ""
        yield text(_case_errors(faulty), detail.message_chars)
    rules = _dicts(comparison.get("rules"))
    shown = rules if detail.passing_rules else [r for r in rules if r.get("passed") is not True]
    cuts.add("passing rules", len(rules) - len(shown))
    if shown:  # no chart here: it would only restate this table's figures
        yield from _rule_table(shown)
    yield from _cases(rules, detail, cuts)
    yield from key_values("Diagnosis", comparison.get("diagnosis"))


def _case_errors(names: list[str]) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:5]) + (" ..." if len(names) > 5 else "")
    return f"Not a pass: {len(names)} case(s) have comparison.case errors ({shown})."


def _rule_table(rules: list[Mapping[str, Any]]) -> Iterator[str]:
    # The figure at the pass rate asked differs from the worst case's only when a rule lets some cases fail;
    # a column that repeats "measured" row for row says nothing.
    at_rate = any(number(r.get("would_pass_at")) != number(r.get("measured")) for r in rules)
    heads = ["", "rule", "measured", "threshold", *(["measured at the pass rate asked"] if at_rate else [])]
    heads += ["worst case", "cases passing"]
    yield ""
    yield "| " + " | ".join(heads) + " |"
    yield "|" + "".join(" ---: |" if h.startswith(("measured", "threshold", "cases")) else " --- |" for h in heads)
    for r in rules:
        mark = "✅" if r.get("passed") is True else "❌"
        keys = ("measured", "threshold", "would_pass_at") if at_rate else ("measured", "threshold")
        figures = " | ".join(number(r.get(k)) for k in keys)
        yield f"| {mark} | {rule_name(r)} | {figures} | {worst_case(r)} | {_pass_rate(r)} |"


def worst_case(rule: Mapping[str, Any]) -> str:
    """The worst case's name, or "all alike" when every case measured the same (no case is the worst)."""
    cases = rule.get("cases")
    if isinstance(cases, Mapping) and len(cases) > 1 and len({repr(v) for v in cases.values()}) == 1:
        return "all alike"
    return text(rule.get("worst_case") or "—", 80)


def rule_name(rule: Mapping[str, Any]) -> str:
    params = rule.get("params")
    args = ""
    if isinstance(params, Mapping) and params:
        args = " (" + ", ".join(f"{k}={_param(v)}" for k, v in list(params.items())[:8]) + ")"
    return text(f"{rule.get('output', '?')} {rule.get('check', '?')}{args}{rule_scope(rule)}", 300)


def _param(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _pass_rate(rule: Mapping[str, Any]) -> str:
    rate, needed = rule.get("pass_rate"), rule.get("min_pass_rate")
    if not is_number(rate):
        return "—"
    shown = f"{float(rate):.0%}"
    if is_number(needed) and float(needed) < 1:
        shown += f" (needs {float(needed):.0%})"
    return shown


WORST_PASSING = 3  # passing cases shown beside the failing ones, worst first


def _case_fails(rule: Mapping[str, Any], value: object) -> bool:
    threshold = rule.get("threshold")
    if not is_number(value):
        return True  # not measured
    if not is_number(threshold):
        return False
    return float(value) < float(threshold) if rule.get("direction") == "min" else float(value) > float(threshold)


def _badness(rule: Mapping[str, Any], value: object) -> float:
    if not is_number(value):
        return float("inf")
    return -float(value) if rule.get("direction") == "min" else float(value)


def _cases(rules: list[Mapping[str, Any]], detail: Detail, cuts: Cuts) -> Iterator[str]:
    """Per failing rule: its failing cases, the worst few passing ones, and how many more pass."""
    rows: list[str] = []
    for r in rules:
        cases = r.get("cases")
        if r.get("passed") is True or not isinstance(cases, Mapping):
            continue
        ordered = sorted(cases.items(), key=lambda item: _badness(r, item[1]), reverse=True)
        failing = [(n, v) for n, v in ordered if _case_fails(r, v)]
        passing = [(n, v) for n, v in ordered if not _case_fails(r, v)]
        name = rule_name(r)
        rows.extend(f"| {name} | {text(n, 80)} | {number(v)} | ❌ |" for n, v in failing)
        rows.extend(f"| {name} | {text(n, 80)} | {number(v)} | ✅ |" for n, v in passing[:WORST_PASSING])
        if len(passing) > WORST_PASSING:
            rows.append(f"| {name} | _{len(passing) - WORST_PASSING} more cases pass_ | | |")
    if not rows:
        return
    if not detail.cases:
        cuts.add("per-case figures", len(rows))
        return
    yield ""
    yield "<details><summary>Per-case figures of the failing rules: failing cases, then the worst passing</summary>"
    yield ""
    yield "| rule | case | measured | |"
    yield "| --- | --- | ---: | --- |"
    yield from rows
    yield ""
    yield "</details>"


def key_values(title: str, value: object) -> Iterator[str]:
    """A free-form mapping of the report (validation, diagnosis): its scalar fields, collapsed."""
    if not isinstance(value, Mapping):
        return
    items = [(k, v) for k, v in value.items() if isinstance(v, (str, int, float, bool)) or v is None][:20]
    if not items:
        return
    yield ""
    yield f"<details><summary>{title}</summary>"
    yield ""
    yield "| field | value |"
    yield "| --- | --- |"
    yield from (f"| {text(k, 60)} | {text(v, 300)} |" for k, v in items)
    yield ""
    yield "</details>"
