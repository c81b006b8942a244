"""The comparison stage: the baseline against the reference, then each variant, on the same cases.

The baseline is judged first with `comparison.rules`. Each variant is then judged against the same expected
outputs with its `rules`, and against the baseline's own outputs with its `drift_rules`; a failed rule of a
variant says which boundary broke (export: baseline vs reference; transform: variant vs baseline), and a
failed variant gets a diagnosis of where its intermediate tensors leave the baseline's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.compare.answering import (
    AnswerSet,
    baseline_side,
    judge_answers,
    parse_answer_entries,
    reference_side,
)
from checker.compare.boundaries import Boundaries
from checker.compare.determinism import REPEATED, repeat_findings
from checker.compare.dynamic import DEFAULT_ATOL, DEFAULT_RTOL, Declared, prove_axes
from checker.compare.progress import Progress, for_run
from checker.compare.ruleset import Entry, RuleSet, check_outputs, diagnosed_case, judge_set
from checker.compare.ruleset import entries as rule_entries
from checker.compare.sentinels import Watch
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
from checker.compare.shapes import ShapeWatch, watch
from checker.compare.transform import transform_findings
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.answers import AnswerRule
from checker.manifest.model.rules import AllClose, MaxAbs, RuleBase
from checker.manifest.model.variants import Variant
from checker.reports.model import Comparison

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime as ort

    from checker.context import Case, Context

Outputs = dict[str, dict[str, "np.ndarray"]]  # case -> output -> array
# Opens a session on a graph file: onnxruntime's own here, a worker's in another runtime (runtimes.remote).
Opener = Callable[[Path, Runtime, int], Any]
Keys = tuple[str | int, ...]
_SHOWN_FAILURES = 5
_NO_EXPECTED = "the case has no expected outputs"
_NO_BASELINE = "the baseline gave no output for this case"


@dataclass
class Run:
    """What the judging of one bundle shares: the context, the resolved runtime, and the results so far."""

    ctx: Context
    runtime: Runtime
    progress: Progress
    comparisons: list[Comparison]
    statuses: dict[str, str] = field(default_factory=dict)  # graph name -> pass | fail | not_assessed
    baseline_path: Path | None = None
    baseline_outputs: Outputs = field(default_factory=dict)  # only the outputs the variants' rules name
    opener: Opener | None = None  # None: this process's onnxruntime
    # In another runtime (--runtime): a graph it cannot load is runtime.load, and what the checker's own
    # run already said (transform findings, the diagnosis, the baseline outputs it shares) is not repeated.
    elsewhere: bool = False
    # Sees every graph's outputs case by case (None when a case failed): how a provider is held to the CPU's.
    observe: Callable[[str, Case, dict[str, np.ndarray] | None], None] | None = None
    # Outputs a device recorded (platforms/replay.py): only the cases themselves can be run, so no stacked run
    # proves a dynamic axis there.
    replayed: bool = False

    @property
    def cases(self) -> list[Case]:
        return self.ctx.loaded_cases

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.cases]


def compare_stage(ctx: Context) -> Iterator[Finding]:
    """Judge the baseline, then every variant; results go to ctx.comparisons."""
    comparisons = ctx.comparisons
    blocked = not_run(ctx)
    if blocked is not None:
        yield blocked
        return
    runtime = resolve_runtime(ctx.spec.runtime, ctx.options.providers, ctx.options.intra_op_threads)
    run = Run(ctx, runtime, for_run(ctx.options.progress), comparisons)
    sentinels = Watch()
    run.observe = sentinels.observe
    yield from judge_all(run)
    yield from sentinels.findings(None, None, **ctx.where("comparison"))


def judge_all(run: Run) -> Iterator[Finding]:
    """The baseline, then every variant, in one runtime."""
    ctx = run.ctx
    try:
        variants = views.variants(ctx.spec)
        run.progress.start("comparing", len(run.cases) * (1 + len(variants)))
        yield from _baseline(run, variants)
        for variant in variants:
            run.statuses[variant.name] = yield from _variant(run, variant)
    finally:
        run.progress.close()


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
    if not ctx.cases and ctx.options.shard is not None and ctx.case_order:
        return F.info(
            F.COMPARISON_NOT_RUN,
            f"shard {ctx.options.shard.label()} holds none of the {len(ctx.case_order)} cases",
            shard_empty=True,
        )
    if not ctx.cases:
        return F.error(
            F.COMPARISON_NOT_RUN,
            "the comparison did not run: there is no usable comparison case (none is declared, or none loaded)",
            **ctx.where("comparison", "cases"),
        )
    return None


def _needed_outputs(ctx: Context, variants: list[Variant]) -> set[str]:
    """Baseline outputs the variants' rules name (for a rule on an answer, the outputs the answer reads): kept for
    drift rules and to tell the boundaries apart."""
    sources = views.answer_sources(ctx.spec)
    out: set[str] = set()
    for rule in (rule for v in variants for rule in views.variant_rules(v)):
        if isinstance(rule, RuleBase):
            out.add(rule.output)
        else:
            out.update(sources.get(rule.answer, []))
    return out


def _answer_set(
    run: Run, graph: str, rules: Sequence[RuleBase | AnswerRule] | None, against: str
) -> Generator[Finding, None, AnswerSet]:
    """The rules on answers among `rules`, judged against the reference's answers or the baseline's."""
    book = run.ctx.answers
    entries, found = parse_answer_entries(run.ctx, rules, book)
    yield from found
    other = reference_side(book) if against == "reference" else baseline_side(book, run.baseline_outputs)
    return AnswerSet(graph, against, entries, book, other)


def _judge_answers(run: Run, answers: AnswerSet, comparison: Comparison) -> Iterator[Finding]:
    """The rules on answers after the tensor rules, and the answers that changed, in the same comparison."""
    if not answers.entries:
        return
    judged = judge_answers(run.ctx, answers, run.names)
    comparison.rules.extend(judged.results)
    comparison.changes.extend(judged.changes)
    yield from judged.findings


def _baseline(run: Run, variants: list[Variant]) -> Iterator[Finding]:
    ctx = run.ctx
    entries = rule_entries(views.baseline_rules(ctx.spec))
    graph = ctx.spec.graph
    run.baseline_path = ctx.graph_path or (ctx.path(graph.path) if graph is not None and graph.path else None)
    session = yield from _open(run, "baseline", run.baseline_path, ("graph", "path"), ctx.graph)
    if session is None:
        run.comparisons.append(Comparison("baseline", "reference", skipped="onnxruntime could not load the graph"))
        run.progress.advance(len(run.cases))
        run.statuses["baseline"] = "fail"
        return
    yield from check_outputs(ctx, entries, _output_names(session), "the baseline graph")
    rules = RuleSet(
        "baseline", "reference", entries, lambda c: c.expected, _NO_EXPECTED, ctx.labels, frozenset(ctx.index_outputs)
    )
    baseline_rules = ctx.spec.comparison.rules if ctx.spec.comparison is not None else None
    answers = yield from _answer_set(run, "baseline", baseline_rules, "reference")
    shapes = watch(ctx, "the baseline", ctx.graph)
    yield from _run_cases(run, "baseline", session, [rules, answers], shapes, keep=_needed_outputs(ctx, variants))
    if not run.elsewhere:
        ctx.outputs["baseline"] = run.baseline_outputs
    comparison, found = judge_set(ctx, rules, run.names)
    yield from _judge_answers(run, answers, comparison)
    comparison.case_errors = _faulty(run)
    run.comparisons.append(comparison)
    run.statuses["baseline"] = comparison.status
    yield from found
    if not run.replayed:
        yield from _dynamic_axes(run, session)


def _dynamic_axes(run: Run, session: ort.InferenceSession) -> Iterator[Finding]:
    """graph.dynamic_axes: along each dynamic batch axis, stacked cases give each item its own output."""
    ctx = run.ctx
    if ctx.graph is None:
        return
    declared = ctx.spec.inputs or ()
    # What the axes are judged by: each input's declared shape and layout.
    by_name = {e.name: Declared(() if e.shape is None else tuple(e.shape), e.layout) for e in declared}
    failures = prove_axes(ctx.graph, session, run.cases, by_name, _tolerance(ctx), ctx.options.case_timeout_s)
    for failure in failures:
        name = failure.axis.axes[0][0]
        where = [i for i, e in enumerate(declared) if e.name == name][:1]
        axes = ", ".join(f"'{n}' axis {a}" for n, a in failure.axis.axes)
        fixing = f"; {failure.fixing_node} fixes its size" if failure.fixing_node else ""
        one, two = failure.cases
        stacked = f"cases '{one}' and '{two}'" if one != two else f"case '{one}' twice"
        yield F.error(
            F.GRAPH_DYNAMIC_AXES,
            f"the graph declares dim '{failure.axis.name}' ({axes}) dynamic, but with {stacked} stacked along it "
            f"{failure.problem}{fixing}",
            **(ctx.where("inputs", where[0], "shape") if where else ctx.where("inputs")),
            axis=failure.axis.name,
            node=failure.fixing_node,
        )


def _tolerance(ctx: Context) -> Any:
    """An output's tolerance for the stacked run: its first allclose or max_abs rule's, else a small default."""
    rules = views.baseline_rules(ctx.spec)

    def tolerance(output: str) -> tuple[float, float]:
        for rule in rules:
            if rule.output == output and isinstance(rule, AllClose):
                return rule.atol, rule.rtol
            if rule.output == output and isinstance(rule, MaxAbs):
                return rule.max, 0.0
        return DEFAULT_ATOL, DEFAULT_RTOL

    return tolerance


def _output_names(session: ort.InferenceSession) -> list[str]:
    return [o.name for o in session.get_outputs()]


def _open(
    run: Run, graph: str, path: Path | None, keys: Keys, model: Any
) -> Generator[Finding, None, ort.InferenceSession | None]:
    if path is None:
        yield F.error(F.COMPARISON_RUNTIME, f"{graph}: the graph file is unusable", **run.ctx.where(*keys))
        return None
    try:
        if run.opener is not None:
            session = run.opener(path, run.runtime, weight_bytes(model))
        else:
            session = open_session(path, run.runtime, weight_bytes=weight_bytes(model))
    except SessionError as exc:
        fid = F.RUNTIME_LOAD if run.elsewhere else F.COMPARISON_RUNTIME
        yield F.error(fid, f"{graph}: onnxruntime cannot load the graph: {exc}", **run.ctx.where(*keys))
        return None
    for name in missing_providers(session, run.runtime):
        yield F.warning(
            F.RUNTIME_PROVIDER,
            f"{graph}: onnxruntime could not start execution provider {name}; "
            f"the comparison ran on {', '.join(session.get_providers())}",
            **run.ctx.where("runtime", "execution_providers"),
        )
    return session


def _faulty(run: Run) -> list[str]:
    """The judged cases whose files have comparison.case errors, in case order."""
    return [n for n in run.names if n in run.ctx.faulty_cases]


def _run_cases(
    run: Run,
    graph: str,
    session: ort.InferenceSession,
    sets: list[RuleSet | AnswerSet],
    shapes: ShapeWatch,
    keep: set[str] | None = None,
) -> Iterator[Finding]:
    """Run every case once through the session and let each rule set judge it; keep only what is asked for.

    The shapes onnxruntime returns are held against the declared ones (graph.io when they differ).
    """
    failures: list[tuple[Case, str]] = []
    firsts: list[tuple[Case, dict[str, np.ndarray]]] = []  # run again before any rule is judged (determinism)
    run.progress.describe(f"comparing {graph}")
    for case in run.cases:
        try:
            outputs: dict[str, np.ndarray] | None = run_case(session, case.inputs, run.ctx.options.case_timeout_s)
            failure = None
        except CaseRunError as exc:
            outputs, failure = None, str(exc)
            failures.append((case, failure))
        if outputs is not None and len(firsts) < REPEATED:
            firsts.append((case, outputs))
        for rules in sets:
            rules.add_case(case, outputs, failure)
        if outputs is not None:
            shapes.add(case.name, outputs)
        if run.observe is not None:
            run.observe(graph, case, outputs)
        if keep is not None and outputs is not None:
            run.baseline_outputs[case.name] = {k: v for k, v in outputs.items() if k in keep}
        run.progress.advance()
    model = run.ctx.graph if graph == "baseline" else run.ctx.variant_models.get(graph)
    yield from repeat_findings(run.ctx, graph, session, firsts, model)
    if failures:
        yield _failures_finding(run.ctx, graph, failures)
    yield from shapes.findings(run.ctx)


def _failures_finding(ctx: Context, graph: str, failures: list[tuple[Case, str]]) -> Finding:
    shown = "; ".join(f"'{c.name}': {msg}" for c, msg in failures[:_SHOWN_FAILURES])
    more = f"; and {len(failures) - _SHOWN_FAILURES} more" if len(failures) > _SHOWN_FAILURES else ""
    return F.error(
        F.COMPARISON_RUNTIME,
        f"{graph}: onnxruntime failed on {len(failures)} case(s): {shown}{more}",
        **ctx.where(*failures[0][0].where),
        cases=[c.name for c, _ in failures],
    )


def _blocked(run: Run, variant: Variant) -> str | None:
    """Why a variant cannot be judged, or None."""
    if variant.name in run.ctx.bad_graphs:
        return "its graph could not be parsed or checked (see the findings about its graph)"
    parent = variant.derived_from
    if parent not in run.statuses:
        return f"derived_from names '{parent}', which is neither 'baseline' nor an earlier variant"
    if run.statuses[parent] == "pass":
        return None
    if parent == "baseline":
        if run.ctx.faulty_cases & set(run.names):
            return "the baseline failed (its cases have comparison.case errors), so a variant's error cannot be read"
        return "the baseline failed, so a variant's error cannot be read against it"
    state = "failed" if run.statuses[parent] == "fail" else "was not judged"
    return f"variant '{parent}', which it derives from, {state}"


def _variant(run: Run, variant: Variant) -> Generator[Finding, None, str]:
    """Judge one variant; its status (pass, fail or not_assessed)."""
    ctx, name = run.ctx, variant.name
    model = ctx.variant_models.get(name)
    if not run.elsewhere:
        yield from transform_findings(name, variant.transform, model, ctx.where(*variant.transform.at))
    path = ctx.path(variant.graph.path)
    reason = _blocked(run, variant) or (None if path is not None else "its graph file is missing or refused")
    session = None
    if reason is None:
        session = yield from _open(run, name, path, (*variant.graph.at, "path"), model)
        reason = None if session is not None else "onnxruntime could not load its graph"
    if session is None or reason is not None:
        run.progress.advance(len(run.cases))
        run.comparisons.append(Comparison(name, "reference", skipped=reason))
        yield F.error(F.VARIANT_NOT_ASSESSED, f"variant '{name}' was not judged: {reason}", **ctx.where(*variant.at))
        return "not_assessed"
    judged = yield from _judge_variant(run, variant, session)
    run.comparisons.extend(judged)
    if all(c.status == "pass" for c in judged):
        return "pass"
    if path is not None and not run.elsewhere:  # a path is always there once a session is open on it
        yield from _diagnosis(run, variant, model, path, judged)
        yield from _collapse(run, name, model, path, judged)
    return "fail"


def _collapse(run: Run, name: str, model: Any, path: Path, judged: list[Comparison]) -> Iterator[Finding]:
    """A failed rule on an answer whose output the variant quantized under one scale across parts of very different
    ranges (box pixels and scores): the collapse said, and its remedy measured (answers/collapse.py)."""
    book = run.ctx.answers
    failed = [r for c in judged for r in c.rules if r.answer is not None and not r.passed and r.worst_case]
    if book is None or not failed or run.ctx.graph is None:
        return
    from checker.answers import collapse as C  # only a variant failing on an answer needs it
    from checker.answers.make import sources

    try:
        variant = model if model is not None else load_graph(path)
    except Exception:  # the diagnosis already said the graph cannot be parsed
        return
    for result in failed:
        declared = book.answers.get(result.answer)
        case = next((c for c in run.cases if c.name == result.worst_case), None)
        if declared is None or case is None:
            continue
        for output in sources(declared.answer):
            try:
                found = C.find(run.ctx.graph, variant, output, case.inputs)
                if found is None:
                    continue
                remedy = C.remedy_words(variant, found, case.inputs, _judge_on(book, declared, case, result))
            except Exception as exc:  # onnxruntime or onnx refusing the edited graph: said, not raised
                yield F.info(F.VARIANT_DIAGNOSIS, f"{name}: the collapse of '{output}' could not be measured: {exc}")
                continue
            found = dataclasses.replace(found, remedy=remedy)
            yield F.info(
                F.VARIANT_DIAGNOSIS,
                f"{name}: answer '{declared.name}' on case '{case.name}': {found.words()}",
                variant=name,
                case=case.name,
                collapse={
                    "output": output,
                    "node": found.node,
                    "scale": found.scale,
                    "parts": [dataclasses.asdict(p) for p in found.parts],
                },
                nodes_to_exclude=[found.node],
            )
            return


def _judge_on(book: Any, declared: Any, case: Case, result: Any) -> Any:
    """The failed rule's measure of the worst case, for outputs made another way (the remedy)."""
    from checker.manifest.model.answers import RULE_BY_CHECK
    from checker.manifest.model.build import build

    raw = {"answer": declared.name, "check": result.check, **result.params}
    rule = build(RULE_BY_CHECK[result.check], raw)
    reference = book.reference.get(case.name, {}).get(declared.name)

    def judge(outputs: Any) -> str:
        mine = book.decode(declared.name, case, outputs)
        measure = declared.kind.measure(rule, declared.answer, mine, reference or [])
        verdict = "passes" if measure.passed else f"still fails ({measure.note})"
        figure = declared.kind.wording.format(
            v=measure.figure, t=declared.kind.threshold(rule), **{"iou": 0.5, **result.params}
        )
        return f"case '{case.name}' {figure} and {verdict}"

    return judge


def _judge_variant(
    run: Run, variant: Variant, session: ort.InferenceSession
) -> Generator[Finding, None, list[Comparison]]:
    ctx, name = run.ctx, variant.name
    ref_entries = rule_entries(views.output_rules(variant.rules))
    drift_entries = rule_entries(views.drift_rules(variant))
    yield from check_outputs(ctx, ref_entries + drift_entries, _output_names(session), f"variant '{name}'")
    base = run.baseline_outputs
    reference = RuleSet(
        name, "reference", ref_entries, lambda c: c.expected, _NO_EXPECTED, ctx.labels, frozenset(ctx.index_outputs)
    )
    drift = RuleSet(
        name,
        "baseline",
        drift_entries,
        lambda c: base.get(c.name),
        _NO_BASELINE,
        ctx.labels,
        frozenset(ctx.index_outputs),
    )
    # The variant's own rules against the baseline's outputs: the error the transform alone introduced.
    shadow_entries = [Entry(e.block, e.rule) for e in ref_entries]
    shadow = RuleSet(
        name,
        "baseline",
        shadow_entries,
        lambda c: base.get(c.name),
        _NO_BASELINE,
        ctx.labels,
        frozenset(ctx.index_outputs),
    )
    model = ctx.variant_models.get(name)
    ref_answers = yield from _answer_set(run, name, variant.rules, "reference")
    drift_answers = yield from _answer_set(run, name, variant.drift_rules, "baseline")
    sets: list[RuleSet | AnswerSet] = [reference, drift, shadow, ref_answers, drift_answers]
    yield from _run_cases(run, name, session, sets, watch(ctx, f"variant '{name}'", model))
    boundaries = Boundaries(name, shadow, run.cases, base)
    judged, found = judge_set(ctx, reference, run.names, boundaries)
    yield from _judge_answers(run, ref_answers, judged)
    judged.case_errors = _faulty(run)
    yield from found
    if ctx.options.shard is not None:
        _keep_boundaries(judged, ref_entries, boundaries)
    if not drift_entries and not drift_answers.entries:
        return [judged]
    drifted, found = judge_set(ctx, drift, run.names)
    yield from _judge_answers(run, drift_answers, drifted)
    drifted.case_errors = _faulty(run)
    yield from found
    return [judged, drifted]


def _keep_boundaries(judged: Comparison, entries: list[Entry], boundaries: Boundaries) -> None:
    """A shard's rules keep their per-case figures at both boundaries, for the merged rule's sentence."""
    for result, entry in zip(judged.rules, entries):
        pair = boundaries.judged(entry)
        if pair is not None:
            result.boundaries = {"export": pair[0].cases, "transform": pair[1].cases}


def _diagnosis(run: Run, entry: Variant, model: Any, path: Path, judged: list[Comparison]) -> Iterator[Finding]:
    """Where the failed variant's tensors leave the baseline's, on its worst case; and its first fix, measured."""
    name = entry.name
    case = next((c for c in run.cases if c.name == diagnosed_case(judged)), None)
    if case is None or run.baseline_path is None or run.ctx.graph is None:
        return
    from checker.compare import divergence as D  # only a failed variant needs it

    try:
        variant = model if model is not None else load_graph(path)
        graphs = D.Graphs(run.ctx.graph, run.baseline_path.parent, variant, path.parent)
        result = D.diagnose(graphs, name, case.name, case.inputs, run.runtime)
    except D.DiagnosisError as exc:
        yield F.info(F.VARIANT_DIAGNOSIS, f"{name}: the diagnosis could not run: {exc}")
        return
    summary = result.record()
    for comparison in judged:
        if comparison.status == "fail":
            comparison.diagnosis = summary
    nodes = result.nodes_to_exclude()
    from checker.checks import measuredfix  # only a failed variant needs it

    measured = measuredfix.unmeasured(run.ctx, entry, judged)
    if measured is None:
        measured = measuredfix.measure(run.ctx, entry, (run.baseline_path, path), nodes, run.runtime)
    # The variant and case let `checker report merge` keep the one diagnosis the whole set makes.
    yield F.info(
        F.VARIANT_DIAGNOSIS,
        f"diagnosis: {result.summary()}",
        nodes_to_exclude=nodes,
        variant=name,
        case=case.name,
        measured=measured,
    )


def load_graph(path: Path) -> Any:
    """A graph file without its external data (onnxruntime reads that itself, from the bundle folder)."""
    import onnx

    from checker.compare import divergence as D

    try:
        return onnx.load(str(path), format="protobuf", load_external_data=False)
    except Exception as exc:  # protobuf's decode errors share no narrower base
        raise D.DiagnosisError(f"'{path.name}' cannot be parsed: {exc}") from exc
