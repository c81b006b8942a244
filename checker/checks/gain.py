"""What each variant gains over the baseline: its files' size, and its speed on the same cases in this process.

A variant that is neither smaller nor faster beyond the noise is `variant.no_gain`: a warning, or an error
when the manifest's `expect` states what the variant must gain and a measured figure falls short.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.compare import timing
from checker.compare.session import CaseRunError, SessionError, open_session, resolve_runtime, timed_run, weight_bytes
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.release import Graph
from checker.manifest.model.variants import Expect, Variant
from checker.platforms.emulation import emulated
from checker.reports.parts.gains import Gain, Latency, Size

if TYPE_CHECKING:
    from checker.context import Context

DEFAULT_BUDGET_S = 1.0  # per variant: the timing stops here if its interval is not yet tight


def gain_stage(ctx: Context) -> Iterator[Finding]:
    """For every variant the comparison opened: xsmaller and xfaster than the baseline, and variant.no_gain."""
    if not ctx.options.run_comparison or ctx.graph is None or not ctx.cases:
        return
    judged = {c.graph for c in ctx.comparisons if c.skipped is None}
    base_files = _files(ctx, ctx.spec.graph) if ctx.spec.graph is not None else None
    if "baseline" not in judged or base_files is None:
        return
    runtime = resolve_runtime(ctx.spec.runtime, ctx.options.providers, ctx.options.intra_op_threads)
    for variant in views.variants(ctx.spec):
        files = _files(ctx, variant.graph)
        if variant.name not in judged or files is None:
            continue
        latency = _latency(ctx, runtime, base_files[0], files[0], variant.name)
        gain = Gain(variant.name, _size(base_files, files), latency)
        ctx.gains.append(gain)
        yield from _verdict(ctx, variant, gain)


def _files(ctx: Context, graph: Graph) -> list[Path] | None:
    """The graph file and its external data files, or None when one of them is unusable."""
    if graph.path is None:
        return None
    rels = [graph.path, *(e.path for e in graph.external_data or ())]
    paths = [ctx.path(rel) for rel in rels]
    return None if any(p is None for p in paths) else [p for p in paths if p is not None]


def _size(base: list[Path], variant: list[Path]) -> Size:
    base_bytes, variant_bytes = (sum(p.stat().st_size for p in files) for files in (base, variant))
    return Size(base_bytes, variant_bytes, base_bytes / variant_bytes if variant_bytes else 0.0)


def not_device_figure(ctx: Context) -> str | None:
    """Why this machine's timing is not the device's: bundles sharing the cores, or an emulated CPU."""
    if ctx.options.sharing > 1:
        return f"--jobs verified {ctx.options.sharing} bundles side by side on shared cores"
    return emulated()


def _latency(ctx: Context, runtime: Any, base: Path, variant: Path, name: str) -> Latency:
    budget = ctx.options.gain_budget_s
    threads = {k: v for k, v in runtime.options.items() if k.endswith("_threads")}
    out = Latency(threads or "onnxruntime's default (one per core)")
    if budget <= 0:
        return replace(out, skipped="timing was turned off (--gain-budget 0)")
    try:
        sessions = [
            open_session(path, runtime, weight_bytes=weight_bytes(model))
            for path, model in ((base, ctx.graph), (variant, ctx.variant_models.get(name)))
        ]
    except SessionError as exc:
        return replace(out, skipped=f"a session could not be opened: {exc}")
    cases = [c.inputs for c in ctx.loaded_cases][:16]
    feeds = [[{i.name: case[i.name] for i in s.get_inputs() if i.name in case} for case in cases] for s in sessions]
    timeout = ctx.options.case_timeout_s

    def runner(k: int) -> timing.Run:
        return lambda i: _run(sessions[k], feeds[k][i], timeout)

    try:
        measured = timing.paired(runner(0), runner(1), len(cases), budget)
    except CaseRunError as exc:
        return replace(out, skipped=f"a graph failed while being timed: {exc}")
    return replace(out, timing=measured.record(), not_device_figure=not_device_figure(ctx))


def _run(session: Any, feed: dict[str, Any], timeout: float) -> None:
    timed_run(session, None, feed, timeout)


def _verdict(ctx: Context, variant: Variant, gain: Gain) -> Iterator[Finding]:
    name, size, latency, measured = gain.variant, gain.size, gain.latency, gain.latency.timing
    smaller = float(size.smaller)
    faster = measured.faster if measured is not None else None
    low = measured.interval.low if measured is not None else None
    said = [f"{size.ratio()} ({size.variant_bytes} bytes against {size.baseline_bytes})"]
    if measured is not None:
        said.append(f"{measured.ratio()}, {measured.rounds} paired rounds)")
    caveat = f"; not a device figure: {latency.not_device_figure}" if latency.not_device_figure else ""
    where = ctx.where(*variant.at)
    expect = variant.expect
    if expect is not None:
        said_all = ", ".join(said) + caveat
        yield from _expected(name, expect, smaller, latency, said_all, ctx.where(*expect.at))
        return
    gains_size = smaller > 1.0
    gains_speed = low is not None and float(low) > 1.0 + timing.NOISE
    if not (gains_size or gains_speed):
        untimed = f"; its speed was not measured: {latency.skipped}" if latency.skipped is not None else ""
        yield F.warning(
            F.VARIANT_NO_GAIN,
            f"variant '{name}' is neither smaller nor faster than the baseline beyond the noise: "
            f"{', '.join(said)}{untimed}{caveat}",
            **where,
            graph=name,
            smaller=smaller,
            faster=faster,
        )


def _expected(
    name: str, expect: Expect, smaller: float, latency: Latency, said: str, where: dict[str, Any]
) -> Iterator[Finding]:
    """variant.no_gain as an error for each expectation the measured figures fall short of."""
    short = []
    if expect.smaller is not None and smaller < expect.smaller:
        short.append(f"{expect.smaller:g}x smaller")
    faster = latency.timing.faster if latency.timing is not None else None
    speed_short = expect.faster is not None and (faster is None or float(faster) < expect.faster)
    if not short and not speed_short:
        return
    if expect.faster is not None and speed_short:
        short.append(f"{expect.faster:g}x faster")
    message = f"variant '{name}' does not gain what its manifest expects ({' and '.join(short)}): {said}"
    # A speed measured on shared or emulated cores says nothing about the device: that shortfall only warns.
    soft = not short[:-1] and speed_short and bool(latency.not_device_figure or latency.skipped is not None)
    make = F.warning if soft else F.error
    expected = {k: v for k, v in (("smaller", expect.smaller), ("faster", expect.faster)) if v is not None}
    yield make(F.VARIANT_NO_GAIN, message, **where, graph=name, smaller=smaller, faster=faster, expected=expected)
