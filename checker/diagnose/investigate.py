"""`checker diagnose`: open a bundle as verify does, pick a case, and diagnose one variant against the baseline."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.compare import divergence as D
from checker.compare.answering import AnswerSet, baseline_side, judge_answers, parse_answer_entries, reference_side
from checker.compare.metrics import sqnr_db
from checker.compare.ruleset import RuleSet, entries, judge_set
from checker.compare.ruleset import diagnosed_case as pick_case
from checker.compare.session import (
    CaseRunError,
    Runtime,
    SessionError,
    open_session,
    resolve_runtime,
    run_case,
    weight_bytes,
)
from checker.context import Case, Context, Options
from checker.errors import BundleError, UsageError
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.variants import Variant

if TYPE_CHECKING:
    import onnxruntime as ort


@contextmanager
def prepared(path: Path) -> Iterator[Context]:
    """The bundle opened and loaded up to its cases; a bundle that cannot get that far is a BundleError."""
    from checker.bundle.opening import open_bundle
    from checker.checks.cases import cases_stage
    from checker.checks.files import files_stage
    from checker.checks.graph import graph_stage
    from checker.manifest.load import load_manifest

    with open_bundle(path) as opened:
        if opened.manifest_path is None:
            raise BundleError(_reasons(f"{path}: no manifest found", opened.findings))
        manifest, found = load_manifest(opened.manifest_path)
        if manifest is None or _errors(found):
            raise BundleError(_reasons(f"{path}: the manifest is not valid", found))
        ctx = Context(opened.root, manifest, Options())
        # The stages that load what a diagnosis needs, refusing what verify refuses (paths, external data, cases),
        # and, for a bundle with answers, the labels and the reference answers its rules on answers judge against.
        for stage in (files_stage, graph_stage, cases_stage):
            found += list(stage(ctx))
        if ctx.spec.answers:
            from checker.checks.answers import answers_stage
            from checker.checks.labels import labels_stage

            found += list(labels_stage(ctx)) + list(answers_stage(ctx))
        if ctx.graph is None or not ctx.cases:
            raise BundleError(_reasons(f"{path}: the baseline graph or the cases cannot be loaded", found))
        yield ctx


def _errors(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.severity is F.Severity.ERROR]


def _reasons(head: str, found: list[Finding]) -> str:
    lines = [f"  {f.id}: {f.message}" for f in _errors(found)[:10]]
    return "\n".join([head, *lines])


def variant_entry(ctx: Context, name: str) -> tuple[Variant, Path]:
    entry = views.variant(ctx.spec, name)
    if entry is None:
        known = ", ".join(v.name for v in views.variants(ctx.spec)) or "none"
        raise UsageError(f"no variant '{name}' in the manifest (variants: {known})")
    if name in ctx.bad_graphs:
        raise BundleError(f"variant '{name}': its graph is not usable (run checker verify for the findings)")
    path = ctx.path(entry.graph.path)
    if path is None:
        raise BundleError(f"variant '{name}': its graph file is missing or refused")
    return entry, path


def _session(path: Path, runtime: Runtime, model: Any) -> ort.InferenceSession:
    try:
        return open_session(path, runtime, weight_bytes=weight_bytes(model))
    except SessionError as exc:
        raise BundleError(f"onnxruntime cannot load '{path.name}': {exc}") from exc


def diagnosed_case(ctx: Context, variant: str, graphs: D.Graphs, paths: tuple[Path, Path], runtime: Runtime) -> Case:
    """The case `checker verify` diagnoses: the worst case of the variant's first failing rule, judged here as
    verify judges it; when no rule fails, the case on which its outputs are furthest from the baseline's."""
    base, var = _session(paths[0], runtime, graphs.baseline), _session(paths[1], runtime, graphs.variant)
    outputs: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {}
    for case in ctx.loaded_cases:
        outputs[case.name] = (_outputs(var, case), _outputs(base, case))
    named = _failing_worst(ctx, variant, outputs)
    found = next((c for c in ctx.loaded_cases if c.name == named), None)
    return found if found is not None else _furthest(ctx, outputs)


def _outputs(session: ort.InferenceSession, case: Case) -> dict[str, Any] | None:
    try:
        return run_case(session, case.inputs)
    except CaseRunError:
        return None


def _failing_worst(ctx: Context, variant: str, outputs: dict[str, tuple[Any, Any]]) -> str | None:
    """The variant's rules (against the reference, then against the baseline) judged on `outputs`."""
    entry = views.variant(ctx.spec, variant)
    if entry is None:
        return None
    reference, drift = entries(views.output_rules(entry.rules)), entries(views.drift_rules(entry))
    sets = [
        RuleSet(variant, "reference", reference, lambda c: c.expected, "no expected outputs", ctx.labels),
        RuleSet(variant, "baseline", drift, lambda c: outputs[c.name][1], "no baseline output", ctx.labels),
    ]
    answer_sets = _answer_sets(ctx, entry, outputs)
    cases = [c for c in ctx.loaded_cases if c.name in outputs]
    judged_sets: list[RuleSet | AnswerSet] = [*sets, *answer_sets]
    for rules in judged_sets:
        for case in cases:
            actual = outputs[case.name][0]
            rules.add_case(case, actual, None if actual is not None else "the variant failed on this case")
    names = [c.name for c in cases]
    judged = []
    for rules, answers in zip(sets, answer_sets):
        comparison = judge_set(ctx, rules, names)[0]
        comparison.rules.extend(judge_answers(ctx, answers, names).results)  # after the tensor rules, as verify
        judged.append(comparison)
    return pick_case(judged)


def _answer_sets(ctx: Context, variant: Variant, outputs: dict[str, tuple[Any, Any]]) -> list[AnswerSet]:
    """The variant's rules on answers, against the reference's answers and the baseline's, as verify judges them."""
    book = ctx.answers
    reference, _ = parse_answer_entries(ctx, variant.rules, book)
    drift, _ = parse_answer_entries(ctx, variant.drift_rules, book)
    base = {name: pair[1] for name, pair in outputs.items() if pair[1] is not None}
    return [
        AnswerSet(variant.name, "reference", reference, book, reference_side(book)),
        AnswerSet(variant.name, "baseline", drift, book, baseline_side(book, base)),
    ]


def changed_answers(ctx: Context, variant: str, case: Case) -> list[str]:
    """What changed in the product's words on the diagnosed case (the boxes, strings, decisions), for the
    diagnosis to start from."""
    if ctx.answers is None:
        return []
    entry, variant_path = variant_entry(ctx, variant)
    runtime = resolve_runtime(ctx.spec.runtime)
    if ctx.graph_path is None:
        return []
    pair = (
        _outputs(_session(variant_path, runtime, None), case),
        _outputs(_session(ctx.graph_path, runtime, ctx.graph), case),
    )
    out: list[str] = []
    for answers in _answer_sets(ctx, entry, {case.name: pair}):
        answers.add_case(case, pair[0], "the variant failed on this case")
        for change in judge_answers(ctx, answers, [case.name]).changes:
            said = f"answer '{change.answer}': {change.change}"
            if said not in out:
                out.append(said)
    return out


def _furthest(ctx: Context, outputs: dict[str, tuple[Any, Any]]) -> Case:
    """The case on which the variant's outputs are furthest from the baseline's (the lowest SQNR)."""
    worst: tuple[float, Case] | None = None
    for case in ctx.loaded_cases:
        a, b = outputs.get(case.name, (None, None))
        if a is None or b is None:
            continue
        shared = [k for k in b if k in a and a[k].shape == b[k].shape and a[k].dtype.kind == "f"]
        score = min((sqnr_db(a[k], b[k]) for k in shared), default=None)
        if score is not None and (worst is None or score < worst[0]):
            worst = (score, case)
    if worst is None:
        raise BundleError("no case runs on both graphs, so there is nothing to diagnose")
    return worst[1]


def investigate(
    path: Path,
    variant: str,
    case_name: str | None,
    min_db: float = D.DEFAULT_MIN_DB,
    requantize: bool = False,
    budget_s: float = 300.0,
) -> dict[str, Any]:
    """Diagnose `variant` against the baseline on `case_name`, or on the case verify diagnoses; with
    `requantize`, measure the candidate exclusions by re-running the recorded transform."""
    with prepared(path) as ctx:
        result = _diagnosis(ctx, variant, case_name, min_db)
        out = result.to_dict(full=True)
        case = next((c for c in ctx.loaded_cases if c.name == result.case), None)
        changed = changed_answers(ctx, variant, case) if case is not None else []
        if changed:
            out["answers_changed"] = changed
        if requantize:
            out["requantize"] = _requantize(ctx, variant, result.nodes_to_exclude(), budget_s).to_dict()
        return out


def _requantize(ctx: Context, variant: str, candidates: list[str], budget_s: float) -> Any:
    from checker.compare.requantize import Request, requantize

    entry, variant_path = variant_entry(ctx, variant)
    if ctx.graph_path is None:
        raise BundleError("the baseline graph is not usable")
    runtime = resolve_runtime(ctx.spec.runtime)
    request = Request(entry, ctx.graph_path, variant_path, candidates, ctx.cases, budget_s)
    return requantize(ctx, request, runtime)


def _diagnosis(ctx: Context, variant: str, case_name: str | None, min_db: float) -> D.Diagnosis:
    _, variant_path = variant_entry(ctx, variant)
    runtime = resolve_runtime(ctx.spec.runtime)
    baseline_path = ctx.graph_path
    if baseline_path is None or ctx.graph is None:
        raise BundleError("the baseline graph is not usable")
    model = ctx.variant_models.get(variant)
    if model is None:
        model = _load(variant_path)
    graphs = D.Graphs(ctx.graph, baseline_path.parent, model, variant_path.parent)
    if case_name is None:
        case = diagnosed_case(ctx, variant, graphs, (baseline_path, variant_path), runtime)
    else:
        case = _named_case(ctx, case_name)
    try:
        return D.diagnose(graphs, variant, case.name, case.inputs, runtime, min_db)
    except D.DiagnosisError as exc:
        raise BundleError(f"the diagnosis could not run: {exc}") from exc


def _named_case(ctx: Context, name: str) -> Case:
    case = next((c for c in ctx.loaded_cases if c.name == name), None)
    if case is None:
        shown = ", ".join(c.name for c in ctx.loaded_cases[:20])
        raise UsageError(f"no case '{name}' (cases: {shown})")
    return case


def _load(path: Path) -> Any:
    from checker.checks.comparison import load_graph

    try:
        return load_graph(path)
    except D.DiagnosisError as exc:
        raise BundleError(str(exc)) from exc
