"""The runtime-by-rule table: each rule's verdict and figure in the checker's own run and in every --runtime set.

Renderers draw it from the report alone; its cells are plain strings, to be escaped by whoever draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checker.reports.model import mappings as _dicts

OWN = "this checker's onnxruntime"
Column = tuple[str, str, str, str, int]  # graph, against, output, check, the rule's index in its comparison


def _columns(sets: Sequence[Sequence[Mapping[str, Any]]]) -> list[Column]:
    columns: dict[Column, None] = {}
    for comparisons in sets:
        for c in comparisons:
            for i, r in enumerate(_dicts(c.get("rules"))):
                key = (str(c.get("graph")), str(c.get("against")), str(r.get("output")), str(r.get("check")), i)
                columns.setdefault(key)
    return list(columns)


def _figure(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return f"{value:.4g}"


def _cell(comparisons: Sequence[Mapping[str, Any]], column: Column) -> str:
    graph, against, _, _, index = column
    for c in comparisons:
        if str(c.get("graph")) == graph and str(c.get("against")) == against:
            if c.get("skipped"):
                return "not assessed"
            rules = _dicts(c.get("rules"))
            if index < len(rules):
                rule = rules[index]
                return f"{'✓' if rule.get('passed') else '✗'} {_figure(rule.get('measured'))}"
    return "-"


def heading(column: Column) -> str:
    graph, against, output, check, _ = column
    side = "" if against == "reference" else f" vs {against.removesuffix('ExecutionProvider')}"
    return f"{graph}{side} {output}/{check}"


def runtime_table(bundle: Mapping[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """(headings, rows) with one row per runtime set, or None when the bundle ran in no other runtime."""
    runtimes = _dicts(bundle.get("runtimes"))
    if not runtimes:
        return None
    own = _dicts(bundle.get("comparisons"))
    sets = [own] + [_dicts(r.get("comparisons")) for r in runtimes]
    columns = _columns(sets)
    rows = [[OWN, _status(own, None), *(_cell(own, c) for c in columns)]]
    for runtime, comparisons in zip(runtimes, sets[1:]):
        status = _status(comparisons, runtime.get("error"))
        rows.append([str(runtime.get("runtime")), status, *(_cell(comparisons, c) for c in columns)])
    return ["runtime", "status", *(heading(c) for c in columns)], rows


def _status(comparisons: Sequence[Mapping[str, Any]], error: object) -> str:
    if error:
        return "fail (not run)"
    if any(c.get("status") == "fail" for c in comparisons):
        return "fail"
    if any(c.get("status") == "not_assessed" for c in comparisons) or not comparisons:
        return "fail (not assessed)" if error is not None or comparisons else "not assessed"
    return "pass"
