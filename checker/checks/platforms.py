"""The comparison again on each platform the manifest declares (or --platform names): a CPU class natively when
this machine is of that class, else in a worker under qemu's user-mode emulation (platforms.launch); an engine
in onnxruntime-node or onnxruntime-web's WASM or WebGPU backend in headless Chromium (platforms.engines).

Each platform is a runtime set of the report, judged on the same cases by the same rules as the checker's own
run; a failed rule there is an error like any other, so the worst platform decides. The set records the CPU
features the worker saw (an engine: its fingerprint); a worker whose CPU is not of the class asked for (an
emulation that silently lacks an instruction set) judges nothing. A declared platform that cannot run here, or
that this run did not ask for, is `not_run`, shown in the verdict line and failed by --strict. A device is
judged from the outputs it sent back (checks/devices.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.checks.comparison import Opener, Run, judge_all, not_run
from checker.compare.progress import NoProgress
from checker.compare.session import CPU, Runtime
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.platforms import userland
from checker.platforms.against import NativeDiff
from checker.platforms.catalog import DEVICE, NONE, TARGET, Platform, declared, resolve
from checker.platforms.explain import explain
from checker.platforms.features import class_of, this_machine
from checker.platforms.launch import Plan, in_userland, plan
from checker.platforms.settle import Side
from checker.reports.model import Comparison, NotRun, RuntimeSet, for_runtime
from checker.reports.parts.placement import PlatformRecord
from checker.runtimes.remote import Channel, Worker, WorkerError, remote_opener

if TYPE_CHECKING:
    import numpy as np

    from checker.context import Case

Observer = Callable[[str, "Case", "dict[str, np.ndarray] | None"], None]


def platforms_stage(ctx: Context) -> Iterator[Finding]:
    if not_run(ctx) is not None:
        return  # the checker's own comparison already says why nothing can be compared
    runtime = ctx.spec.runtime
    asked = ctx.options.platforms
    names = asked or [TARGET]  # declared platforms are judged by default
    platforms, unknown = resolve([n for n in names if n != NONE], views.platforms(runtime))
    for name in unknown:
        yield F.error(
            F.PLATFORM_NOT_RUN,
            f"--platform {name}: no platform of that name is declared in runtime.platforms, and it is no CPU class "
            "(x86-64-v2, x86-64-v3, x86-64-v4, x86-64-v4-vnni, aarch64, aarch64-dotprod, ...) or engine "
            "(browser-wasm, browser-webgpu, node)",
            **ctx.where("runtime"),
        )
    if TARGET in asked and not views.platforms(runtime):
        yield F.error(
            F.PLATFORM_NOT_RUN, "--platform target: the manifest declares no runtime.platforms", **ctx.where("runtime")
        )
    chosen = {p.name for p in platforms}
    for platform in declared(runtime):
        if platform.name not in chosen and platform.engine != DEVICE:
            words = "--platform none" if NONE in asked else f"--platform named only {', '.join(asked)}"
            yield _skip(ctx, platform, f"declared in runtime.platforms, but not judged in this run ({words})")
    here, _ = this_machine()
    for platform in platforms:
        if platform.engine == DEVICE:
            continue  # judged from the folder its runner wrote (--device-outputs: checks/devices.py)
        if platform.engine is not None:
            yield from _one_engine(ctx, platform)
        else:
            yield from _one_platform(ctx, platform, here)


def label_of(platform: Platform) -> str:
    shown = platform.name if platform.name == platform.cpu_class else f"{platform.name} ({platform.cpu_class})"
    return f"platform {shown}"


def _skip(ctx: Context, platform: Platform, reason: str) -> Finding:
    ctx.not_run.append(NotRun(label_of(platform), reason))
    return F.info(F.PLATFORM_NOT_RUN, f"{label_of(platform)} was not run: {reason}", platform=platform.name)


def _one_platform(ctx: Context, platform: Platform, here: str) -> Iterator[Finding]:
    chosen = plan(platform, here)
    if isinstance(chosen, Plan) and chosen.userland:
        chosen = _with_userland(ctx, chosen)
    if isinstance(chosen, str):
        yield _skip(ctx, platform, chosen)
        return
    label = label_of(platform)
    try:
        worker = Worker(chosen.python, label, ctx.options.case_timeout_s, chosen.launcher)
    except WorkerError as exc:
        yield _skip(ctx, platform, f"its worker did not start under {chosen.how}: {exc}")
        return
    try:
        seen = class_of(worker.machine, worker.cpu_features)
        if seen != platform.cpu_class:
            yield _skip(ctx, platform, f"under {chosen.how} the worker's CPU is {seen}, not {platform.cpu_class}")
            return
        native = NativeDiff(ctx, views.session_options(ctx.spec.runtime))
        try:
            result = judged_set(ctx, worker, _cpu_record(chosen, worker, {}), label, {}, native.observe)
        finally:
            native.close()
        if result.set.platform is not None and native.figures:
            result.set.platform.against_native = native.figures
        ctx.runtime_sets.append(result.set)
        yield from result.findings
        runtime = Runtime([CPU], views.session_options(ctx.spec.runtime))
        yield from _envelope(ctx, result.set, remote_opener(worker), runtime, label, platform, native)
        yield from native.sentinels.findings(label, platform.name, **_where_platforms(ctx))

        def rerun(config: dict[str, str], graphs: dict[Path, Path]) -> RuntimeSet:
            return judged_set(ctx, worker, _cpu_record(chosen, worker, config), label, config, None, graphs).set

        yield from explain(ctx, result.set, rerun)
        said = result.set.platform.to_dict() if result.set.platform is not None else {}
        side = Side(label, platform.name, remote_opener(worker), runtime, True, said)
        yield from settled_findings(ctx, result.set, side, platform.name)
    finally:
        worker.close()


def _one_engine(ctx: Context, platform: Platform) -> Iterator[Finding]:
    """The comparison in onnxruntime-node, or in onnxruntime-web's WASM or WebGPU backend in headless Chromium."""
    from checker.compare.session import machine_threads
    from checker.platforms.engines import fallbacks, placed_counts, start

    options = views.session_options(ctx.spec.runtime)
    threads = min(int(options.get("intra_op_num_threads", 0)), machine_threads())
    started = start(platform, ctx.spec.runtime, ctx.options.offline, ctx.options.case_timeout_s, threads)
    if isinstance(started, str):
        yield _skip(ctx, platform, started)
        return
    label = label_of(platform)
    try:
        record = PlatformRecord.from_dict({**platform.to_dict(), "how": started.how, "machine": started.worker.machine,
                                           "cpu_features": [], "onnxruntime": started.version})  # fmt: skip
        native = NativeDiff(ctx, options)
        try:
            result = judged_set(
                ctx, started.worker, record, label, {}, native.observe, provider=started.backend,
                package=started.package,
            )  # fmt: skip
        finally:
            native.close()
        if result.set.platform is not None and native.figures:
            result.set.platform.against_native = native.figures
        placements = started.placements
        started.fingerprint.placed = placed_counts(placements.values())
        result.set.fingerprint = started.fingerprint
        ctx.runtime_sets.append(result.set)
        yield from (_with_node(f) for f in result.findings)
        runtime = Runtime([started.backend], options)
        yield from _envelope(ctx, result.set, remote_opener(started.worker), runtime, label, platform, native)
        yield from native.sentinels.findings(label, platform.name, **_where_platforms(ctx))
        side = Side(label, platform.name, remote_opener(started.worker), runtime, True, started.fingerprint.to_dict())
        yield from settled_findings(ctx, result.set, side, platform.name)
        first = ctx.cases[0].inputs if ctx.cases else {}
        for path, placed in placements.items():
            graph = _graph_of(ctx, Path(path))
            model = ctx.graph if graph == "baseline" else ctx.variant_models.get(graph or "")
            found = fallbacks(graph or Path(path).name, placed, model, first)
            if found is not None:
                yield _fallback(ctx, label, platform, started.backend, found)
    finally:
        started.close()


def _envelope(
    ctx: Context, judged: RuntimeSet, opener: Any, runtime: Runtime, label: str, platform: Platform, native: NativeDiff
) -> Iterator[Finding]:
    """The envelope's points there, against this machine's run of them (checks/envelope.py)."""
    if ctx.spec.comparison is None or not ctx.spec.comparison.envelope:
        return
    from checker.checks.envelope import judge_elsewhere

    record, found = judge_elsewhere(ctx, opener, runtime, label, platform.name, native.sentinels)
    if judged.platform is not None and record:
        judged.platform.envelope = record
    yield from (_with_node(f) for f in found)


MAX_SETTLED = 2  # disagreements settled per platform: each runs its graph on both sides a few times


def disagreements(native: list[Comparison], there: list[Comparison]) -> list[tuple[str, str, str]]:
    """(graph, case, output) per graph where a rule passes on one side and fails on the other: the case is the
    failing side's worst."""
    found: dict[str, tuple[str, str, str]] = {}
    mine = {(c.graph, c.against): c for c in native if c.skipped is None}
    for theirs in there:
        ours = mine.get((theirs.graph, theirs.against))
        if ours is None or theirs.skipped is not None or theirs.graph in found:
            continue
        for a, b in zip(theirs.rules, ours.rules):
            if a.output == b.output and a.check == b.check and a.passed != b.passed:
                case = a.worst_case if not a.passed else b.worst_case
                if case is not None:
                    found[theirs.graph] = (theirs.graph, case, a.output)
                    break
    return list(found.values())


def settled_findings(ctx: Context, judged: RuntimeSet, side: Side, platform: str) -> Iterator[Finding]:
    """Which side is right where this platform and the checker's own run disagree (platforms/settle.py)."""
    from checker.compare.session import resolve_runtime
    from checker.platforms.settle import settle, words

    here = resolve_runtime(ctx.spec.runtime, None, ctx.options.intra_op_threads)
    cases = {c.name: c for c in ctx.loaded_cases}
    release = {"name": ctx.spec.release.name, "digest": ctx.digest}
    for graph, case_name, output in disagreements(ctx.comparisons, judged.comparisons)[:MAX_SETTLED]:
        path = ctx.graph_path if graph == "baseline" else _variant_path(ctx, graph)
        model = _full_model(path, ctx.graph if graph == "baseline" else ctx.variant_models.get(graph))
        if path is None or model is None or case_name not in cases:
            continue
        found = settle(path, model, graph, cases[case_name], output, side, here, _reproductions(ctx), release,
                       ctx.options.case_timeout_s)  # fmt: skip
        yield F.warning(
            F.PLATFORM_DIVERGENCE,
            f"[{side.label}] {graph} on case '{case_name}', where this platform and the checker's own run disagree: "
            f"{words(found)}",
            **_where_platforms(ctx), platform=platform, **found.to_dict(),
        )  # fmt: skip


def _variant_path(ctx: Context, name: str) -> Path | None:
    variant = views.variant(ctx.spec, name)
    return ctx.path(variant.graph.path) if variant is not None else None


def _full_model(path: Path | None, parsed: Any) -> Any:
    """The graph with its weights (its external data from beside it, inside the bundle), or None when it is too
    large to settle a disagreement on here."""
    import onnx

    from checker.compare.session import weight_bytes
    from checker.platforms.settle import MAX_MODEL_BYTES

    if path is None or parsed is None or weight_bytes(parsed) > MAX_MODEL_BYTES:
        return None
    try:
        return onnx.load(str(path))
    except Exception:  # protobuf's decode errors share no narrower base; the graph stage said why already
        return None


def _reproductions(ctx: Context) -> Path:
    if ctx.options.reproductions is not None:
        return ctx.options.reproductions
    from checker.runtimes.envs import cache_root

    return cache_root().parent / "reproductions"


def _with_node(finding: Finding) -> Finding:
    """A graph an engine cannot load or run names its node in the details (from onnxruntime's words)."""
    from checker.platforms.engines import named_node

    node = named_node(finding.message) if finding.id in (F.RUNTIME_LOAD, F.COMPARISON_RUNTIME) else None
    if node is None:
        return finding
    return Finding(finding.id, finding.severity, finding.message, finding.file, finding.line,
                   {**finding.details, "node": node})  # fmt: skip


def _graph_of(ctx: Context, path: Path) -> str | None:
    """The graph ("baseline" or a variant's name) a file judged on a platform is."""
    if ctx.graph_path is not None and path == ctx.graph_path:
        return "baseline"
    return next((v.name for v in views.variants(ctx.spec) if ctx.path(v.graph.path) == path), None)


def _where_platforms(ctx: Context) -> dict[str, Any]:
    declared_here = bool(views.platforms(ctx.spec.runtime))
    return ctx.where("runtime", "platforms") if declared_here else ctx.where("runtime")


def _fallback(ctx: Context, label: str, platform: Platform, backend: str, found: Any) -> Finding:
    forbid = ctx.spec.runtime is not None and ctx.spec.runtime.fallback == "forbid"
    shown = ", ".join(f"{op} ({name})" for op, name in found.nodes[:20])
    more = f" and {len(found.nodes) - 20} more" if len(found.nodes) > 20 else ""
    make = F.error if forbid else F.warning
    return make(
        F.PLATFORM_FALLBACK,
        f"[{label}] {found.graph}: the {backend} backend left {len(found.nodes)} node(s) to onnxruntime's "
        f"{found.provider}: {shown}{more}. The outputs were judged, but these nodes did not run on {backend}",
        **_where_platforms(ctx),
        platform=platform.name,
        graph=found.graph,
        backend=backend,
        provider=found.provider,
        nodes=[{"op_type": op, "name": name} for op, name in found.nodes[:50]],
        node_count=len(found.nodes),
    )


def _with_userland(ctx: Context, chosen: Plan) -> Plan | str:
    """The aarch64 plan in a userland with this checker's onnxruntime and NumPy releases, or why there is none."""
    import numpy
    import onnxruntime

    try:
        model = chosen.launcher[chosen.launcher.index("-cpu") + 1]
        root = userland.ensure(onnxruntime.__version__, numpy.__version__, ctx.options.offline, model)
    except userland.UserlandError as exc:
        return str(exc)
    return in_userland(chosen, root)


def _substituting(opener: Opener, graphs: dict[Path, Path]) -> Opener:
    """An opener that opens `graphs[path]` where the judging asks for `path`."""

    def open_instead(path: Path, runtime: Runtime, weight_bytes: int) -> Any:
        return opener(graphs.get(path, path), runtime, weight_bytes)

    return open_instead


class Judged:
    """One platform's runtime set and the findings its judging gave."""

    def __init__(self, result: RuntimeSet, findings: list[Finding]) -> None:
        self.set, self.findings = result, findings


def _cpu_record(chosen: Plan, worker: Worker, config: dict[str, str]) -> PlatformRecord:
    return PlatformRecord.from_dict(
        {
            **chosen.platform.to_dict(),
            "how": chosen.how,
            "machine": worker.machine,
            "cpu_features": list(worker.cpu_features),
            "onnxruntime": worker.version,
            **({"session_config": dict(config)} if config else {}),
        }
    )


def judged_set(
    ctx: Context,
    worker: Channel,
    record: PlatformRecord,
    label: str,
    config: dict[str, str],
    observe: Observer | None = None,
    graphs: dict[Path, Path] | None = None,
    provider: str = CPU,
    package: str = "onnxruntime",
) -> Judged:
    """Every graph judged in `worker`, with the manifest's session options and these session config entries;
    `observe` sees each case's outputs there; `graphs` puts other files in place of shipped ones."""
    options = views.session_options(ctx.spec.runtime)
    if config:
        options["config_entries"] = dict(config)
    result = RuntimeSet(label, package, record.onnxruntime or "", provider, platform=record)
    run = Run(ctx, Runtime([provider], options), NoProgress(), result.comparisons)
    run.opener, run.elsewhere, run.observe = _substituting(remote_opener(worker), graphs or {}), True, observe
    return Judged(result, [for_runtime(label, f) for f in judge_all(run)])
