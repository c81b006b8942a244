"""The comparison stage: the baseline against the reference, then each variant, on the same cases.

The baseline is judged first with `comparison.rules`. Each variant is then judged against the same expected
outputs with its `rules`, and against the baseline's own outputs with its `drift_rules`; a failed rule of a
variant says which boundary broke (export: baseline vs reference; transform: variant vs baseline), and a
failed variant gets a diagnosis of where its intermediate tensors leave the baseline's.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.compare import diagnose as D
from checker.compare.progress import Progress, for_run
from checker.compare.rules import judge_rule
from checker.compare.ruleset import Entry, RuleSet, case_result, check_outputs, judge_set, parse_entries
from checker.compare.session import (
    CaseRunError,
    Runtime,
    SessionError,
    missing_providers,
    open_session,
    resolve_runtime,
    run_case,
    weight_bytes,
)
from checker.compare.transform import transform_findings
from checker.findings import Finding
from checker.report import Comparison, RuleResult

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime as ort

    from checker.context import Case, Context

Outputs = dict[str, dict[str, "np.ndarray"]]  # case -> output -> array
_SHOWN_FAILURES = 5


@dataclass
class Baseline:
    """What the variants need of the baseline: its status, its file and the outputs their rules name."""

    status: str
    path: Path | None
    outputs: Outputs = field(default_factory=dict)


def compare_stage(ctx: Context) -> Iterator[Finding]:
    """Judge the baseline, then every variant; results go to ctx.extra["comparisons"]."""
    comparisons: list[Comparison] = ctx.extra.setdefault("comparisons", [])
    blocked = not_run(ctx)
    if blocked is not None:
        yield blocked
        return
    progress = for_run(ctx.options.progress)
    try:
        yield from _compare(ctx, comparisons, progress)
    finally:
        progress.close()


def not_run(ctx: Context) -> Finding | None:
    """Why the comparison cannot run at all (a finding, never a crash and never a pass), or None."""
    if not ctx.options.run_comparison:
        return F.info(F.COMPARISON_NOT_RUN, "the comparison was turned off for this run")
    if ctx.graph is None:
        return F.error(
            F.COMPARISON_NOT_RUN,
            "the comparison did not run: the baseline graph is not usable (see the findings about graph.path)",
            **ctx.where("graph", "path"),
        )
    if ctx.cases is None:
        return F.error(
            F.COMPARISON_NOT_RUN,
            "the comparison did not run: the comparison cases could not be loaded (see the comparison.case findings)",
            **ctx.where("comparison", "cases"),
        )
    if not ctx.cases:
        return F.error(
            F.COMPARISON_NOT_RUN,
            "the comparison did not run: no comparison case could be loaded",
            **ctx.where("comparison", "cases"),
        )
    return None


def _variants(ctx: Context) -> list[dict[str, Any]]:
    return [v for v in ctx.data.get("variants") or [] if isinstance(v, dict)]


def _compare(ctx: Context, comparisons: list[Comparison], progress: Progress) -> Iterator[Finding]:
    runtime = resolve_runtime(ctx.data.get("runtime") or {}, ctx.options.providers)
    yield from _provider_findings(ctx, runtime)
    variants = _variants(ctx)
    progress.start("comparing", len(ctx.cases or []) * (1 + len(variants)))
    baseline = yield from _baseline(ctx, runtime, progress, comparisons, variants)
    statuses = {"baseline": baseline.status}
    for i, variant in enumerate(variants):
        status = yield from _variant(ctx, i, variant, baseline, runtime, statuses, progress, comparisons)
        statuses[str(variant.get("name"))] = status


def _provider_findings(ctx: Context, runtime: Runtime) -> Iterator[Finding]:
    """The same words and place as the runtime stage's, so the report keeps one of each."""
    declared = list((ctx.data.get("runtime") or {}).get("execution_providers") or [])
    for name in runtime.unavailable:
        keys: tuple[str | int, ...] = ("runtime", "execution_providers")
        if name in declared:
            keys = (*keys, declared.index(name))
        yield F.warning(
            F.RUNTIME_PROVIDER,
            f"execution provider {name} is not available here; the comparison "
            "falls back to the next one (CPUExecutionProvider last)",
            **ctx.where(*keys),
        )


def _needed_outputs(variants: list[dict[str, Any]]) -> set[str]:
    """Baseline outputs the variants' rules name: kept for drift rules and to tell the boundaries apart."""
    names = set()
    for variant in variants:
        for rule in (variant.get("rules") or []) + (variant.get("drift_rules") or []):
            if isinstance(rule, dict) and isinstance(rule.get("output"), str):
                names.add(rule["output"])
    return names


def _baseline(
    ctx: Context,
    runtime: Runtime,
    progress: Progress,
    comparisons: list[Comparison],
    variants: list[dict[str, Any]],
) -> Generator[Finding, None, Baseline]:
    entries, found = parse_entries(ctx, ("comparison", "rules"))
    yield from found
    path = ctx.graph_path or ctx.path(str((ctx.data.get("graph") or {}).get("path", "")))
    session = yield from _open(ctx, "baseline", path, runtime, ("graph", "path"), ctx.graph)
    if session is None:
        comparisons.append(Comparison("baseline", "reference", skipped="onnxruntime could not load the graph"))
        progress.advance(len(ctx.cases or []))
        return Baseline("fail", path)
    yield from check_outputs(ctx, entries, _output_names(session), "the baseline graph")
    rules = RuleSet("baseline", "reference", entries, lambda c: c.expected, "the case has no expected outputs")
    kept: Outputs = {}
    yield from _run_cases(ctx, "baseline", session, [rules], progress, _needed_outputs(variants), kept)
    ctx.outputs["baseline"] = kept
    comparison, found = judge_set(ctx, rules, _names(ctx))
    comparisons.append(comparison)
    yield from found
    return Baseline(comparison.status, path, kept)


def _names(ctx: Context) -> list[str]:
    return [c.name for c in ctx.cases or []]


def _output_names(session: ort.InferenceSession) -> list[str]:
    return [o.name for o in session.get_outputs()]


def _open(
    ctx: Context, graph: str, path: Path | None, runtime: Runtime, keys: tuple[str | int, ...], model: Any
) -> Generator[Finding, None, ort.InferenceSession | None]:
    if path is None:
        yield F.error(F.COMPARISON_RUNTIME, f"{graph}: the graph file is unusable", **ctx.where(*keys))
        return None
    try:
        session = open_session(path, runtime, weight_bytes=weight_bytes(model))
    except SessionError as exc:
        yield F.error(F.COMPARISON_RUNTIME, f"{graph}: onnxruntime cannot load the graph: {exc}", **ctx.where(*keys))
        return None
    for name in missing_providers(session, runtime):
        yield F.warning(
            F.RUNTIME_PROVIDER,
            f"{graph}: onnxruntime could not start execution provider {name}; "
            f"the comparison ran on {', '.join(session.get_providers())}",
            **ctx.where("runtime", "execution_providers"),
        )
    return session


def _run_cases(
    ctx: Context,
    graph: str,
    session: ort.InferenceSession,
    sets: list[RuleSet],
    progress: Progress,
    keep: set[str],
    kept: Outputs | None,
) -> Iterator[Finding]:
    """Run every case once through the session and let each rule set judge it; keep only what is asked for."""
    failures: list[tuple[Case, str]] = []
    for case in ctx.cases or []:
        try:
            outputs: dict[str, np.ndarray] | None = run_case(session, case.inputs)
            failure = None
        except CaseRunError as exc:
            outputs, failure = None, str(exc)
            failures.append((case, failure))
        for rules in sets:
            rules.add_case(case, outputs, failure)
        if kept is not None and outputs is not None:
            kept[case.name] = {k: v for k, v in outputs.items() if k in keep}
        progress.advance()
    if failures:
        yield _failures_finding(ctx, graph, failures)


def _failures_finding(ctx: Context, graph: str, failures: list[tuple[Case, str]]) -> Finding:
    shown = "; ".join(f"'{c.name}': {msg}" for c, msg in failures[:_SHOWN_FAILURES])
    more = f"; and {len(failures) - _SHOWN_FAILURES} more" if len(failures) > _SHOWN_FAILURES else ""
    return F.error(
        F.COMPARISON_RUNTIME,
        f"{graph}: onnxruntime failed on {len(failures)} case(s): {shown}{more}",
        **ctx.where(*failures[0][0].where),
        cases=[c.name for c, _ in failures],
    )


def _not_assessed(
    ctx: Context, name: str, keys: tuple[str | int, ...], reason: str, comparisons: list[Comparison]
) -> Finding:
    comparisons.append(Comparison(name, "reference", skipped=reason))
    return F.error(F.VARIANT_NOT_ASSESSED, f"variant '{name}' was not judged: {reason}", **ctx.where(*keys))


def _blocked(ctx: Context, name: str, variant: Mapping[str, Any], statuses: Mapping[str, str]) -> str | None:
    """Why a variant cannot be judged, or None."""
    if name in (ctx.extra.get("bad_graphs") or set()):
        return "its graph is not usable (see the findings about its graph)"
    parent = str(variant.get("derived_from", "baseline"))
    if parent not in statuses:
        return f"derived_from names '{parent}', which is neither 'baseline' nor an earlier variant"
    if statuses[parent] == "pass":
        return None
    if parent == "baseline":
        return "the baseline failed, so a variant's error cannot be read against it"
    state = "failed" if statuses[parent] == "fail" else "was not judged"
    return f"variant '{parent}', which it derives from, {state}"


def _variant(
    ctx: Context,
    i: int,
    variant: dict[str, Any],
    baseline: Baseline,
    runtime: Runtime,
    statuses: Mapping[str, str],
    progress: Progress,
    comparisons: list[Comparison],
) -> Generator[Finding, None, str]:
    name = str(variant.get("name", f"variants[{i}]"))
    model = (ctx.extra.get("variant_models") or {}).get(name)
    yield from transform_findings(name, variant.get("transform"), model, ctx.where("variants", i, "transform"))
    reason = _blocked(ctx, name, variant, statuses)
    path = ctx.path(str((variant.get("graph") or {}).get("path", "")))
    session = None
    if reason is None:
        session = yield from _open(ctx, name, path, runtime, ("variants", i, "graph", "path"), model)
        reason = None if session is not None else "onnxruntime could not load its graph"
    if session is None or reason is not None:
        progress.advance(len(ctx.cases or []))
        yield _not_assessed(ctx, name, ("variants", i), reason or "", comparisons)
        return "not_assessed"
    judged = yield from _judge_variant(ctx, i, name, session, baseline, progress)
    comparisons.extend(judged)
    if any(c.status == "fail" for c in judged):
        yield from _diagnosis(ctx, name, model, path, baseline, runtime, judged)
        return "fail"
    return "pass"


def _judge_variant(
    ctx: Context, i: int, name: str, session: ort.InferenceSession, baseline: Baseline, progress: Progress
) -> Generator[Finding, None, list[Comparison]]:
    keys = ("variants", i)
    ref_entries, found = parse_entries(ctx, (*keys, "rules"))
    drift_entries, more = parse_entries(ctx, (*keys, "drift_rules"))
    yield from found + more
    outputs = _output_names(session)
    yield from check_outputs(ctx, ref_entries + drift_entries, outputs, f"variant '{name}'")
    base = baseline.outputs
    no_base = "the baseline gave no output for this case"
    reference = RuleSet(name, "reference", ref_entries, lambda c: c.expected, "the case has no expected outputs")
    drift = RuleSet(name, "baseline", drift_entries, lambda c: base.get(c.name), no_base)
    # The variant's own rules measured against the baseline: the error the transform alone introduced.
    shadow = RuleSet(
        name,
        "baseline",
        [Entry(e.keys, e.raw, e.rule) for e in ref_entries],
        lambda c: base.get(c.name),
        no_base,
    )
    yield from _run_cases(ctx, name, session, [reference, drift, shadow], progress, set(), None)
    names = _names(ctx)
    explain = _Boundaries(ctx, name, shadow, baseline)
    judged, found = judge_set(ctx, reference, names, explain)
    yield from found
    out = [judged]
    if drift_entries:
        drifted, found = judge_set(ctx, drift, names)
        yield from found
        out.append(drifted)
    return out


@dataclass
class _Boundaries:
    """For a failed variant rule: the same rule at each boundary (export, transform) and which one broke."""

    ctx: Context
    variant: str
    shadow: RuleSet
    baseline: Baseline

    def __call__(self, entry: Entry, result: RuleResult) -> str | None:
        rule = entry.rule
        twin = next((e for e in self.shadow.entries if e.keys == entry.keys), None)
        if rule is None or twin is None:
            return None
        names = _names(self.ctx)
        transform = judge_rule(rule, names, twin.results, None)
        export_results = {
            c.name: case_result(rule, self.baseline.outputs.get(c.name), c.expected, "not run", "no expected output")
            for c in self.ctx.cases or []
        }
        export = judge_rule(rule, names, export_results, None)
        return (
            f"by boundary, export (baseline vs reference) {_verdict(export)} and transform "
            f"({self.variant} vs baseline) {_verdict(transform)}: {_which(export.passed, transform.passed)}"
        )


def _verdict(result: RuleResult) -> str:
    if result.measured is None:
        return "could not be measured"
    return f"measures {result.measured:.4g} and {'passes' if result.passed else 'fails'}"


def _which(export_ok: bool, transform_ok: bool) -> str:
    if export_ok and not transform_ok:
        return "the transform introduced the error"
    if transform_ok and not export_ok:
        return "the export's error alone already exceeds the rule"
    if not (export_ok or transform_ok):
        return "both boundaries exceed the rule"
    return "neither boundary alone exceeds the rule; their errors add up"


def _worst_case(judged: list[Comparison]) -> str | None:
    for comparison in judged:
        for rule in comparison.rules:
            if not rule.passed and rule.worst_case is not None:
                return rule.worst_case
    return None


def _diagnosis(
    ctx: Context,
    name: str,
    model: Any,
    path: Path | None,
    baseline: Baseline,
    runtime: Runtime,
    judged: list[Comparison],
) -> Iterator[Finding]:
    """Where the failed variant's tensors leave the baseline's, on its worst case."""
    case_name = _worst_case(judged)
    case = next((c for c in ctx.cases or [] if c.name == case_name), None)
    if case is None or path is None or baseline.path is None or ctx.graph is None:
        return
    try:
        graphs = D.Graphs(
            ctx.graph, baseline.path.parent, model if model is not None else load_graph(path), path.parent
        )
        result = D.diagnose(graphs, name, case.name, case.inputs, runtime)
    except D.DiagnosisError as exc:
        yield F.info(F.VARIANT_DIAGNOSIS, f"{name}: the diagnosis could not run: {exc}")
        return
    summary = result.to_dict()
    for comparison in judged:
        if comparison.status == "fail":
            comparison.diagnosis = summary
    yield F.info(F.VARIANT_DIAGNOSIS, f"diagnosis: {result.summary()}", nodes_to_exclude=result.nodes_to_exclude())


def load_graph(path: Path) -> Any:
    """A graph file without its external data (onnxruntime reads that itself, from the bundle folder)."""
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's decode errors share no narrower base
        raise D.DiagnosisError(f"'{path.name}' cannot be parsed: {exc}") from exc
