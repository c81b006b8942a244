"""The input-size envelope on every platform (compare/envelope.py makes its points).

The checker's own run: each graph runs at each point; a graph that fails there, or trips a sentinel of silent
failure, is `comparison.envelope` (or `comparison.sentinel`). Another platform (a CPU class, an engine, a
device's outputs): each point runs there and here side by side, and the graph's own rules judge the platform's
outputs against this machine's — the reference a point has — so a backend that breaks only on large inputs is
named with the size and the figure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.compare.envelope import EnvelopeError, Point, as_case, declared, points
from checker.compare.rules import Rule, evaluate_case, rule_of
from checker.compare.sentinels import Watch
from checker.compare.session import CaseRunError, Runtime, SessionError, open_session, resolve_runtime, run_case
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.rules import RuleBase

Opener = Callable[[Path, Runtime, int], Any]


@dataclass(frozen=True)
class Graph:
    name: str  # baseline or a variant's name
    path: Path
    rules: list[Rule]  # its tensor rules: what it is judged by elsewhere, against this machine's outputs


def envelope_points(ctx: Context) -> tuple[list[Point], list[Finding]]:
    """The points, or the finding that says why the envelope cannot be used (none declared: neither)."""
    comparison = ctx.spec.comparison
    if not declared(comparison) or not ctx.cases:
        return [], []
    try:
        return points(views.inputs(ctx.spec), comparison, ctx.cases[0]), []
    except EnvelopeError as exc:
        return [], [F.error(F.COMPARISON_ENVELOPE, str(exc), **ctx.where("comparison", "envelope"))]


def graphs(ctx: Context) -> list[Graph]:
    """The baseline and each variant that loaded, with their tensor rules."""
    out = []
    if ctx.graph_path is not None and ctx.graph is not None:
        out.append(Graph("baseline", ctx.graph_path, _rules(views.baseline_rules(ctx.spec))))
    for variant in views.variants(ctx.spec):
        if variant.name not in ctx.variant_models:
            continue
        path = ctx.path(variant.graph.path)
        if path is not None and variant.name not in ctx.bad_graphs:
            out.append(Graph(variant.name, path, _rules(views.output_rules(variant.rules))))
    return out


def _rules(blocks: list[RuleBase]) -> list[Rule]:
    return [rule for rule in map(rule_of, blocks) if not rule.check.task]


def envelope_stage(ctx: Context) -> Iterator[Finding]:
    """Each graph at each point in the checker's own run."""
    found_points, found = envelope_points(ctx)
    yield from found
    if not found_points:
        return
    runtime = resolve_runtime(ctx.spec.runtime, ctx.options.providers, ctx.options.intra_op_threads)
    watch = Watch()
    for graph in graphs(ctx):
        try:
            session = open_session(graph.path, runtime)
        except SessionError:
            continue  # the comparison stage has said why it cannot load
        for point in found_points:
            case = as_case(point)
            try:
                outputs = run_case(session, case.inputs, ctx.options.case_timeout_s)
            except CaseRunError as exc:
                yield F.error(
                    F.COMPARISON_ENVELOPE,
                    f"{graph.name}: the graph fails at {point.words()}: {exc}",
                    **ctx.where("comparison", "envelope"), graph=graph.name, point=point.name, sizes=point.sizes,
                )  # fmt: skip
                continue
            watch.judge(graph.name, case, outputs, None)
    yield from watch.findings(None, None, **ctx.where("comparison", "envelope"))


def judge_elsewhere(
    ctx: Context, opener: Opener, runtime: Runtime, label: str, platform: str, watch: Watch
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Each point on another platform against this machine's run of it: per graph and point, its status and its
    rules' figures (for the report), and the findings."""
    found_points, _ = envelope_points(ctx)  # the envelope's own problems are reported once, by envelope_stage
    record: list[dict[str, Any]] = []
    found: list[Finding] = []
    if not found_points:
        return record, found
    here = resolve_runtime(ctx.spec.runtime, None, ctx.options.intra_op_threads)
    where = ctx.where("comparison", "envelope")
    for graph in graphs(ctx):
        try:
            native, there = open_session(graph.path, here), opener(graph.path, runtime, 0)
        except SessionError:
            continue  # a graph that does not load there is the platform's comparison's to report
        for point in found_points:
            case = as_case(point)
            entry: dict[str, Any] = {"graph": graph.name, "point": point.name, "sizes": point.sizes}
            record.append(entry)
            try:
                mine = run_case(native, case.inputs, ctx.options.case_timeout_s)
            except CaseRunError:
                entry["status"] = "not_assessed"  # fails here too: envelope_stage says so
                continue
            try:
                theirs = run_case(there, case.inputs, ctx.options.case_timeout_s)
            except CaseRunError as exc:
                entry["status"] = "fail"
                found.append(F.error(
                    F.COMPARISON_ENVELOPE,
                    f"[{label}] {graph.name}: the graph fails there at {point.words()}, and runs here: {exc}",
                    **where, platform=platform, graph=graph.name, point=point.name, sizes=point.sizes,
                ))  # fmt: skip
                continue
            watch.judge(graph.name, case, theirs, mine)
            entry["figures"], failed = _judged(graph.rules, theirs, mine)
            entry["status"] = "fail" if failed else "pass"
            for rule, figure in failed:
                found.append(F.error(
                    F.COMPARISON_ENVELOPE,
                    f"[{label}] {graph.name} at {point.words()}: {rule.output}/{rule.check.name} measures "
                    f"{_figure(figure)} against the checker's own run of the same inputs (threshold "
                    f"{rule.threshold:.4g}); at the cases' sizes it holds",
                    **where, platform=platform, graph=graph.name, point=point.name, sizes=point.sizes,
                    output=rule.output, check=rule.check.name, measured=figure, threshold=rule.threshold,
                ))  # fmt: skip
    return record, found


def _judged(
    rules: list[Rule], theirs: dict[str, Any], mine: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[tuple[Rule, float | None]]]:
    figures: list[dict[str, Any]] = []
    failed: list[tuple[Rule, float | None]] = []
    for rule in rules:
        result = evaluate_case(rule, theirs.get(rule.output), mine.get(rule.output))
        figures.append({"output": rule.output, "check": rule.check.name, "measured": result.figure,
                        "threshold": rule.threshold, "passed": result.passed})  # fmt: skip
        if not result.passed:
            failed.append((rule, result.figure))
    return figures, failed


def _figure(value: float | None) -> str:
    return "nothing (the outputs cannot be compared)" if value is None else f"{value:.4g}"
