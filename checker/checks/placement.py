"""Where each declared execution provider puts the graphs' nodes, as onnxruntime itself records it.

For every declared provider this machine's onnxruntime has (and, from the runtimes stage, every one a --runtime
environment has), each graph is opened as it ships (the manifest's session options) with that provider first and
the CPU provider behind it; onnxruntime's record of the subgraphs each provider took goes into the report. A
declared provider other than the CPU's that takes no node, or leaves some to another provider, is
`runtime.fallback`. With `runtime.fallback: forbid` the graph is opened once more with the CPU fallback disabled
(`session.disable_cpu_ep_fallback`): a session that will not open is an error naming the nodes that fell back,
one that opens is the proof the report records. A declared provider this machine lacks has its
`runtime.provider` warning; with `forbid`, its placement is a check not run here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.checks.comparison import not_run
from checker.compare.session import CPU, machine_threads
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.reports.model import NotRun
from checker.reports.parts.placement import Forbid, Placement, ProviderNodes
from checker.runtimes.placing import MEASURED_BY, place
from checker.runtimes.remote import Worker

MOBILE = ("NnapiExecutionProvider", "CoreMLExecutionProvider")  # checks.usability judges these offline
SHOWN_NODES = 50  # fallback nodes kept in the report; the count is always whole
_IN_MESSAGE = 8


def declared_providers(ctx: Context) -> list[str]:
    return list(dict.fromkeys(ctx.options.providers or views.providers(ctx.spec.runtime)))


def forbids_fallback(ctx: Context) -> bool:
    runtime = ctx.spec.runtime
    return runtime is not None and runtime.fallback == "forbid"


def placement_stage(ctx: Context) -> Iterator[Finding]:
    import onnxruntime as ort

    declared = declared_providers(ctx)
    if not declared or not_run(ctx) is not None:
        return
    here = set(ort.get_available_providers())
    for provider in declared:
        if provider in here:
            yield from placed(ctx, f"this checker's onnxruntime {ort.__version__}", provider)
        elif forbids_fallback(ctx) and provider not in (CPU, *MOBILE):  # NNAPI, CoreML: judged offline
            ctx.not_run.append(NotRun(f"placement of {provider}", "this machine's onnxruntime does not have it"))


def graphs(ctx: Context) -> list[tuple[str, Path]]:
    """Every graph that loaded: the baseline and each variant, with its file."""
    out = [("baseline", ctx.graph_path)] if ctx.graph is not None and ctx.graph_path is not None else []
    for variant in views.variants(ctx.spec):
        path = ctx.path(variant.graph.path)
        if variant.name in ctx.variant_models and variant.name not in ctx.bad_graphs and path is not None:
            out.append((variant.name, path))
    return out


def _options(ctx: Context) -> dict[str, Any]:
    options = views.session_options(ctx.spec.runtime)
    for key in ("intra_op_num_threads", "inter_op_num_threads"):  # a session opened, never more threads than CPUs
        if isinstance(options.get(key), int):
            options[key] = min(options[key], machine_threads())
    return options


def placed(ctx: Context, runtime: str, provider: str, worker: Worker | None = None) -> Iterator[Finding]:
    """The placement of every graph with `provider` first, in `worker`'s onnxruntime or this process's."""
    providers = [provider] if provider == CPU else [provider, CPU]
    forbid = forbids_fallback(ctx) and provider != CPU
    options = _options(ctx)
    for graph, path in graphs(ctx):
        answer = place(path, providers, options, forbid, worker)
        if not answer.get("ok"):
            error = str(answer.get("error"))
            if "cannot record" in error:
                ctx.not_run.append(NotRun(f"placement in {runtime}", error))
                return
            continue  # a graph that will not open there: the comparison's own finding says why
        entry = summary(runtime, provider, graph, answer, options)
        ctx.placement.append(entry)
        yield from _findings(ctx, entry)
    # Placed here (a --runtime environment that has the provider this machine's onnxruntime lacks): its
    # placement ran after all, so it is no longer a check not run.
    missing = f"placement of {provider}"
    ctx.not_run[:] = [n for n in ctx.not_run if n.check != missing]


def summary(runtime: str, provider: str, graph: str, answer: dict[str, Any], options: dict[str, Any]) -> Placement:
    """The report's entry: per provider its nodes, partitions and operators; the nodes that left `provider`."""
    providers: dict[str, ProviderNodes] = {}
    ops: dict[str, Counter[str]] = {}
    fallback: list[str] = []
    for name, nodes in answer.get("subgraphs") or []:
        entry = providers.setdefault(str(name), ProviderNodes())
        entry.nodes += len(nodes)
        entry.partitions += 1
        ops.setdefault(str(name), Counter()).update(str(op) for op, _ in nodes)
        if name != provider:
            fallback.extend(f"{op}:{node}" for op, node in nodes)
    for name, entry in providers.items():
        entry.ops = dict(sorted(ops[name].items()))
    out = Placement(
        runtime,
        provider,
        graph,
        nodes=sum(p.nodes for p in providers.values()),
        providers=providers,
        measured_by=MEASURED_BY,
        optimization_level=str(options.get("graph_optimization_level", "all")),
    )
    if provider != CPU:
        out.fallback, out.fallback_count = fallback[:SHOWN_NODES], len(fallback)
    forbid = answer.get("forbid")
    if isinstance(forbid, dict):
        out.forbid = Forbid(bool(forbid.get("opened")), forbid.get("error"))
    return out


def _findings(ctx: Context, entry: Placement) -> Iterator[Finding]:
    provider, graph, runtime = entry.provider, entry.graph, entry.runtime
    if provider == CPU:
        return
    taken = entry.providers[provider].nodes if provider in entry.providers else 0
    count = entry.fallback_count or 0
    forbid = entry.forbid
    refused = forbid is not None and not forbid.opened
    if not count and not refused:
        return
    fallback = entry.fallback or []
    shown = ", ".join(fallback[:_IN_MESSAGE]) + (", ..." if count > _IN_MESSAGE else "")
    what = (
        f"takes none of its {entry.nodes} nodes"
        if not taken
        else f"takes {taken} of its {entry.nodes} nodes; {count} fall back to "
        + ", ".join(p for p in entry.providers if p != provider)
    )
    message = f"[{runtime}] {graph}: declared execution provider {provider} {what}" + (f": {shown}" if shown else "")
    keys: tuple[str | int, ...] = ("runtime", "fallback") if forbid is not None else ("runtime",)
    if forbid is not None:
        if refused:
            message += (
                f". runtime.fallback is forbid, and with session.disable_cpu_ep_fallback=1 onnxruntime does not open "
                f"the graph: {forbid.error}"
            )
        else:
            message += ". runtime.fallback is forbid"
    details: dict[str, Any] = {"graph": graph, "provider": provider, "runtime": runtime, "nodes": fallback}
    make = F.error if forbid is not None else F.warning
    yield make(F.RUNTIME_FALLBACK, message, **ctx.where(*keys), **details)
