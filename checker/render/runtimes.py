"""The runtime-by-rule table: each rule's verdict and figure in the checker's own run and in every --runtime set.

Renderers draw it from the report alone; its cells are plain strings, to be escaped by whoever draws them.
"""

from __future__ import annotations

from collections.abc import Sequence

from checker.reports.model import BundleReport, Comparison

OWN = "this checker's onnxruntime"
Column = tuple[str, str, str, str, int]  # graph, against, output, check, the rule's index in its comparison


def _columns(sets: Sequence[Sequence[Comparison]]) -> list[Column]:
    columns: dict[Column, None] = {}
    for comparisons in sets:
        for c in comparisons:
            for i, r in enumerate(c.rules):
                columns.setdefault((c.graph, c.against, r.output, r.check, i))
    return list(columns)


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _cell(comparisons: Sequence[Comparison], column: Column) -> str:
    graph, against, _, _, index = column
    for c in comparisons:
        if c.graph == graph and c.against == against:
            if c.skipped:
                return "not assessed"
            if index < len(c.rules):
                rule = c.rules[index]
                return f"{'✓' if rule.passed else '✗'} {_figure(rule.measured)}"
    return "-"


def heading(column: Column) -> str:
    graph, against, output, check, _ = column
    side = "" if against == "reference" else f" vs {against.removesuffix('ExecutionProvider')}"
    return f"{graph}{side} {output}/{check}"


def runtime_table(bundle: BundleReport) -> tuple[list[str], list[list[str]]] | None:
    """(headings, rows) with one row per runtime set, or None when the bundle ran in no other runtime."""
    if not bundle.runtimes:
        return None
    own = bundle.comparisons
    sets = [own] + [r.comparisons for r in bundle.runtimes]
    columns = _columns(sets)
    rows = [[OWN, _status(own, None), *(_cell(own, c) for c in columns)]]
    for runtime in bundle.runtimes:
        status = _status(runtime.comparisons, runtime.error)
        rows.append([runtime.runtime, status, *(_cell(runtime.comparisons, c) for c in columns)])
    return ["runtime", "status", *(heading(c) for c in columns)], rows


def _status(comparisons: Sequence[Comparison], error: str | None) -> str:
    if error:
        return "fail (not run)"
    if any(c.status == "fail" for c in comparisons):
        return "fail"
    if any(c.status == "not_assessed" for c in comparisons) or not comparisons:
        return "fail (not assessed)" if error is not None or comparisons else "not assessed"
    return "pass"
