"""The comparison again at every optimization level the application may use (runtime.optimization_levels, or
--opt-levels), in this process's onnxruntime: each level a runtime set judged by the same rules.

A graph that holds at one level and fails at another gets a finding naming the level and, found by bisecting
onnxruntime's `disabled_optimizers` on its worst case, the optimizer that makes the difference.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from checker import findings as F
from checker.checks.comparison import Run, judge_all, not_run
from checker.compare.optimizers import responsible
from checker.compare.progress import NoProgress
from checker.compare.session import CaseRunError, Runtime, SessionError, resolve_runtime
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.reports.model import Comparison, RuntimeSet, for_runtime

DEFAULT_LEVEL = "all"
ORDER = ("disabled", "basic", "extended", "all")


def levels_of(ctx: Context) -> list[str]:
    return list(dict.fromkeys(ctx.options.opt_levels or views.optimization_levels(ctx.spec.runtime)))


def optlevels_stage(ctx: Context) -> Iterator[Finding]:
    levels = levels_of(ctx)
    if not levels or not_run(ctx) is not None:
        return
    own = str(views.session_options(ctx.spec.runtime).get("graph_optimization_level", DEFAULT_LEVEL))
    for level in levels:
        if level != own:  # the checker's own run judged the declared level
            yield from _one_level(ctx, level, own)


def _one_level(ctx: Context, level: str, own: str) -> Iterator[Finding]:
    import onnxruntime as ort

    base = resolve_runtime(ctx.spec.runtime, ctx.options.providers, ctx.options.intra_op_threads)
    runtime = Runtime(base.providers, {**base.options, "graph_optimization_level": level}, base.unavailable)
    label = f"optimization level {level}"
    result = RuntimeSet(label, "onnxruntime", ort.__version__, base.providers[0], optimization_level=level)
    run = Run(ctx, runtime, NoProgress(), result.comparisons)
    run.elsewhere = True  # transform findings, the diagnosis and the baseline outputs: the own run's
    for finding in judge_all(run):
        yield for_runtime(label, finding)
    ctx.runtime_sets.append(result)
    yield from _explain(ctx, result, runtime, level, own)


def _statuses(comparisons: list[Comparison]) -> dict[str, Comparison]:
    out: dict[str, Comparison] = {}
    for c in comparisons:
        if c.skipped is None and (c.graph not in out or c.status == "fail"):
            out[c.graph] = c
    return out


def _worst(comparison: Comparison) -> str | None:
    return next((r.worst_case for r in comparison.rules if not r.passed and r.worst_case), None)


def _explain(ctx: Context, result: RuntimeSet, runtime: Runtime, level: str, own: str) -> Iterator[Finding]:
    here, there = _statuses(result.comparisons), _statuses(ctx.comparisons)
    for graph, comparison in here.items():
        other = there.get(graph)
        if other is None or other.status == comparison.status:
            continue
        failing, holding, failed = (level, own, comparison) if comparison.status == "fail" else (own, level, other)
        case = next((c for c in ctx.loaded_cases if c.name == _worst(failed)), None)
        path = _graph_path(ctx, graph)
        if case is None or path is None:
            continue
        # The optimizer is looked for at the higher of the two levels: the one whose absence there gives the
        # lower level's numbers, whichever of the two holds.
        high, low = sorted((failing, holding), key=ORDER.index, reverse=True)
        try:
            optimizer = responsible(path, runtime, high, low, case.inputs)
        except (SessionError, CaseRunError, RuntimeError) as exc:  # onnxruntime's errors: RuntimeError subclasses
            optimizer, why = None, f" (the bisection could not run: {exc})"
        else:
            why = ""
        named = (
            f"{optimizer} makes the difference: disabling it at level {high} gives the outputs of level {low} on "
            f"case '{case.name}'"
            if optimizer
            else f"no single optimizer of those the checker knows explains it{why}"
        )
        yield F.warning(
            F.RUNTIME_OPT_LEVEL,
            f"{graph} fails at optimization level {failing} and holds at {holding}: {named}",
            **ctx.where("runtime", "optimization_levels"),
            graph=graph,
            level=failing,
            holds_at=holding,
            optimizer=optimizer,
            case=case.name,
        )


def _graph_path(ctx: Context, graph: str) -> Path | None:
    if graph == "baseline":
        return ctx.graph_path
    variant = views.variant(ctx.spec, graph)
    return ctx.path(variant.graph.path) if variant is not None else None
