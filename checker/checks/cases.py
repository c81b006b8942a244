"""Comparison cases: loaded, and matched to the graph's inputs and outputs (comparison.case, .coverage)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from checker import findings as F
from checker.context import Case, Context
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.inputs import Input
from checker.manifest.model.rules import RuleBase
from checker.manifest.model.tensors import Output
from checker.readers.casefiles import load_cases
from checker.readers.graphinfo import TensorSpec, graph_inputs, graph_outputs
from checker.readers.tensors import stream_calls

if TYPE_CHECKING:
    import numpy as np


def _specs(ctx: Context, part: str) -> list[TensorSpec]:
    """The graph's specs when the graph loaded, else the manifest's declarations."""
    entries: Sequence[Input | Output] = views.inputs(ctx.spec) if part == "inputs" else views.outputs(ctx.spec)
    if ctx.graph is not None:
        actual = graph_inputs(ctx.graph) if part == "inputs" else graph_outputs(ctx.graph)
        declared = {e.name: e for e in entries}
        return [_merge(s, declared.get(s.name)) for s in actual]
    return [TensorSpec(e.name, e.dtype or "", tuple(e.shape) if e.shape else None) for e in entries]


def _merge(spec: TensorSpec, entry: Input | Output | None) -> TensorSpec:
    """A manifest int may fix a dim the graph leaves dynamic."""
    if entry is None or not entry.shape or spec.shape is None or len(entry.shape) != len(spec.shape):
        return spec
    dims = tuple(have if isinstance(have, int) else want for want, have in zip(entry.shape, spec.shape))
    return TensorSpec(spec.name, spec.dtype, dims)


def cases_stage(ctx: Context) -> Iterator[Finding]:
    if not views.cases(ctx.spec):
        ctx.cases = []  # nothing to load: completeness already names the missing piece
        return
    inputs, outputs = _specs(ctx, "inputs"), _specs(ctx, "outputs")
    loaded = load_cases(ctx, [s.name for s in inputs], [s.name for s in outputs])
    for message, keys in loaded.problems:
        yield F.error(F.COMPARISON_CASE, message, **ctx.where(*keys))
    ctx.cases = loaded.cases
    yield from _duplicate_names(ctx)
    yield from _cut_streams(ctx, views.streamed_inputs(ctx.spec))
    ruled = _ruled_outputs(ctx)
    for case in ctx.cases:
        if case.frame == 0:
            yield from _match_case(ctx, case, inputs, outputs, ruled)
        elif f"{case.stream_of}[0]" in ctx.faulty_cases:
            # A stream's frames share their shapes: the first frame's problems stand for every frame.
            ctx.faulty_cases.add(case.name)
    yield from _coverage(ctx, ruled)


def _cut_streams(ctx: Context, streamed: set[str]) -> Iterator[Finding]:
    """Each case that feeds a streamed input becomes one case per frame, named `case[k]`, so the graph runs once
    per call as the application runs it (a graph that normalises over its batch gives other numbers on frames
    batched together); the case as stored is kept whole for the fidelity stage."""
    if not streamed:
        return
    out: list[Case] = []
    for case in ctx.loaded_cases:
        if not streamed & case.inputs.keys():
            out.append(case)
            continue
        frames, problem = _frame_count(case, streamed)
        if problem:
            ctx.faulty_cases.add(case.name)
            yield F.error(F.COMPARISON_CASE, f"case '{case.name}': {problem}", **ctx.where(*case.where), case=case.name)
            continue
        ctx.streams[case.name] = case
        out += [_frame(case, k) for k in range(frames)]
    ctx.cases = out


def _frame_count(case: Case, streamed: set[str]) -> tuple[int, str | None]:
    """The frames every tensor of a streamed case stores on its leading axis, or why they do not agree."""
    frames, sizes = stream_calls({**case.inputs, **case.expected})
    if frames is not None:
        return frames, None
    feeds = ", ".join(f"'{n}'" for n in sorted(streamed & case.inputs.keys()))
    return 0, (
        f"it feeds the streamed input {feeds}, so every tensor it stores holds one call per frame on a leading axis "
        f"of one length; the leading axes are: {sizes}"
    )


def _frame(case: Case, k: int) -> Case:
    return Case(
        f"{case.name}[{k}]",
        case.tags,
        {n: a[k, ...] for n, a in case.inputs.items()},
        {n: a[k, ...] for n, a in case.expected.items()},
        {},  # the raw file makes the whole stream: the fidelity stage rebuilds it from the case as stored
        case.where,
        case.files,
        case.label,
        {},
        stream_of=case.name,
        frame=k,
    )


def shard_stage(ctx: Context) -> Iterable[Finding]:
    """With --shard, the later stages see only this shard's cases; the whole set's order is kept for merging.

    It runs after every case is loaded, matched and its labels counted, so the findings about the set as a
    whole (coverage, duplicate names, mismatched files, label counts) are the same in every shard and merge
    into one.
    """
    shard = ctx.options.shard
    if shard is None or ctx.cases is None:
        return ()
    ctx.case_order = [c.name for c in ctx.cases]
    ctx.cases = [c for c in ctx.cases if shard.holds(c.name)]
    return ()


def _ruled_outputs(ctx: Context) -> set[str]:
    """Outputs that a rule judges against the expected outputs (drift rules judge against the baseline's); a rule
    on an answer judges the outputs the answer reads."""
    sources = views.answer_sources(ctx.spec)
    out: set[str] = set()
    for place in views.rules(ctx.spec):
        if place.against != "reference":
            continue
        if isinstance(place.rule, RuleBase):
            out.add(place.rule.output)
        else:
            out.update(sources.get(place.rule.answer, []))
    return out


def _duplicate_names(ctx: Context) -> Iterator[Finding]:
    seen: set[str] = set()
    for case in ctx.loaded_cases:
        if case.name in seen:
            ctx.faulty_cases.add(case.name)
            yield F.error(
                F.COMPARISON_CASE,
                f"two cases are named '{case.name}'; case names must be unique",
                **ctx.where(*case.where, "name"),
            )
        seen.add(case.name)


def _match_case(
    ctx: Context, case: Case, inputs: list[TensorSpec], outputs: list[TensorSpec], ruled: set[str]
) -> Iterator[Finding]:
    problems = list(_match_side(case.inputs, inputs, "input", need={s.name for s in inputs}))
    # An output the graph lacks is the rule's fault (reported once, by the comparison), not every case's.
    problems += _match_side(case.expected, outputs, "output", need=ruled & {s.name for s in outputs})
    problems += _named_dims(case, inputs + outputs)
    if problems:
        ctx.faulty_cases.add(case.name)
    for problem in problems:
        yield F.error(F.COMPARISON_CASE, f"case '{case.name}': {problem}", **ctx.where(*case.where), case=case.name)


def _match_side(arrays: dict[str, np.ndarray], specs: list[TensorSpec], what: str, need: set[str]) -> list[str]:
    by_name = {s.name: s for s in specs}
    out = [f"no {what} '{n}'" for n in sorted(need - set(arrays))]
    for name, array in arrays.items():
        spec = by_name.get(name)
        if spec is None:
            out.append(f"the graph has no {what} '{name}' (it has: {', '.join(by_name) or 'none'})")
            continue
        out += _array_problems(name, array, spec)
    return out


def _array_problems(name: str, array: np.ndarray, spec: TensorSpec) -> list[str]:
    out = []
    if spec.dtype and array.dtype.name != spec.dtype:
        out.append(f"'{name}' is {array.dtype.name}, the graph takes {spec.dtype}")
    if spec.shape is not None:
        if array.ndim != len(spec.shape):
            out.append(
                f"'{name}' has shape {list(array.shape)}, rank {array.ndim}; the graph's is rank {len(spec.shape)}"
            )
        else:
            bad = [i for i, (d, n) in enumerate(zip(spec.shape, array.shape)) if isinstance(d, int) and d != n]
            if bad:
                out.append(f"'{name}' has shape {list(array.shape)}; axis {bad[0]} must be {spec.shape[bad[0]]}")
    return out


def _named_dims(case: Case, specs: list[TensorSpec]) -> list[str]:
    """A dynamic dim named twice (say 'batch') takes one size within a case."""
    sizes: dict[str, tuple[int, str]] = {}
    arrays = {**case.inputs, **case.expected}
    out = []
    for spec in specs:
        array = arrays.get(spec.name)
        if array is None or spec.shape is None or array.ndim != len(spec.shape):
            continue
        for dim, size in zip(spec.shape, array.shape):
            if isinstance(dim, str):
                first = sizes.setdefault(dim, (size, spec.name))
                if first[0] != size:
                    out.append(f"dim '{dim}' is {first[0]} in '{first[1]}' but {size} in '{spec.name}'")
    return out


def _coverage(ctx: Context, ruled: set[str]) -> Iterator[Finding]:
    cases = ctx.loaded_cases
    if cases and not any("edge" in c.tags for c in cases):
        yield F.warning(
            F.COMPARISON_COVERAGE,
            "no case is tagged 'edge': the comparison set should exercise the "
            "task's awkward cases (dark, small, truncated, out-of-vocabulary) as well as ordinary ones",
            **ctx.where("comparison", "cases"),
        )
    for output in sorted(ruled):
        covered = sum(1 for c in cases if output in c.expected)
        if covered == 1:
            yield F.warning(
                F.COMPARISON_COVERAGE,
                f"output '{output}' is judged on a single case; one case cannot show how a release behaves",
                **ctx.where("comparison", "cases"),
            )
