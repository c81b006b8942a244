"""The comparison again on each CPU class asked for with --platform: natively when this machine is of that
class, else in a worker under qemu's user-mode emulation (platforms.launch).

Each platform is a runtime set of the report, judged on the same cases by the same rules as the checker's own
run; a failed rule there is an error like any other, so the worst platform decides. The set records the CPU
features the worker saw; a worker whose CPU is not of the class asked for (an emulation that silently lacks an
instruction set) judges nothing. A platform that cannot run here is `not_run`, shown in the verdict line.
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
from checker.platforms import userland
from checker.platforms.against import NativeDiff
from checker.platforms.catalog import Platform, resolve
from checker.platforms.explain import explain
from checker.platforms.features import class_of, this_machine
from checker.platforms.launch import Plan, in_userland, plan
from checker.reports.model import NotRun, RuntimeSet, for_runtime
from checker.reports.parts.placement import PlatformRecord
from checker.runtimes.remote import Worker, WorkerError, remote_opener

if TYPE_CHECKING:
    import numpy as np

    from checker.context import Case

Observer = Callable[[str, "Case", "dict[str, np.ndarray] | None"], None]


def platforms_stage(ctx: Context) -> Iterator[Finding]:
    if not ctx.options.platforms or not_run(ctx) is not None:
        return  # the checker's own comparison already says why nothing can be compared
    runtime = ctx.data.get("runtime") or {}
    platforms, unknown = resolve(ctx.options.platforms, runtime)
    for name in unknown:
        yield F.error(
            F.PLATFORM_NOT_RUN,
            f"--platform {name}: no platform of that name is declared in runtime.platforms, and it is no CPU class "
            "(x86-64-v2, x86-64-v3, x86-64-v4, x86-64-v4-vnni, aarch64, aarch64-dotprod, ...)",
            **ctx.where("runtime"),
        )
    if "target" in ctx.options.platforms and not runtime.get("platforms"):
        yield F.error(
            F.PLATFORM_NOT_RUN, "--platform target: the manifest declares no runtime.platforms", **ctx.where("runtime")
        )
    here, _ = this_machine()
    for platform in platforms:
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
        native = NativeDiff(ctx, dict((ctx.data.get("runtime") or {}).get("session_options") or {}))
        try:
            result = judged_set(ctx, worker, chosen, label, {}, native.observe)
        finally:
            native.close()
        if result.set.platform is not None and native.figures:
            result.set.platform.against_native = native.figures
        ctx.runtime_sets.append(result.set)
        yield from result.findings
        yield from explain(
            ctx, result.set, lambda config, graphs: judged_set(ctx, worker, chosen, label, config, None, graphs).set
        )
    finally:
        worker.close()


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


def judged_set(
    ctx: Context,
    worker: Worker,
    chosen: Plan,
    label: str,
    config: dict[str, str],
    observe: Observer | None = None,
    graphs: dict[Path, Path] | None = None,
) -> Judged:
    """Every graph judged in `worker`, with the manifest's session options and these session config entries;
    `observe` sees each case's outputs there; `graphs` puts other files in place of shipped ones."""
    options = dict((ctx.data.get("runtime") or {}).get("session_options") or {})
    if config:
        options["config_entries"] = dict(config)
    platform = chosen.platform
    record = PlatformRecord(
        name=platform.name,
        arch=platform.arch,
        cpu_class=platform.cpu_class,
        level=platform.level,
        features=list(platform.features),
        how=chosen.how,
        machine=worker.machine,
        cpu_features=list(worker.cpu_features),
        onnxruntime=worker.version,
        session_config=dict(config) if config else None,
    )
    result = RuntimeSet(label, "onnxruntime", worker.version, CPU, platform=record)
    run = Run(ctx, Runtime([CPU], options), NoProgress(), result.comparisons)
    run.opener, run.elsewhere, run.observe = _substituting(remote_opener(worker), graphs or {}), True, observe
    return Judged(result, [for_runtime(label, f) for f in judge_all(run)])
