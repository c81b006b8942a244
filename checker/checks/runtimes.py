"""The comparison again in each runtime asked for with --runtime, and in each execution provider it offers.

Each runtime is installed once into a cached environment of its own (runtimes.envs); a worker process there
runs the graphs (runtimes.worker) and this process judges their outputs with the same rules as its own run.
Every declared execution provider that the runtime offers gets a set of its own beside the CPU's, judged on
the same cases by the same rules; one it does not offer is an info finding.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from checker import findings as F
from checker.checks.comparison import Run, judge_all, not_run
from checker.checks.placement import placed
from checker.compare.progress import NoProgress
from checker.compare.ruleset import RuleSet, entries, judge_set
from checker.compare.session import CPU, Runtime
from checker.context import Case, Context
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.rules import RuleBase
from checker.reports.model import RuntimeSet, for_runtime
from checker.runtimes.envs import RuntimeSpecError, choose, ensure, parse_spec
from checker.runtimes.remote import Worker, WorkerError, remote_opener

if TYPE_CHECKING:
    import numpy as np

Arrays = Mapping[str, "np.ndarray"]
_NO_CPU = "the CPU provider gave no output for this case"


def runtimes_stage(ctx: Context) -> Iterator[Finding]:
    if not ctx.options.runtimes or not_run(ctx) is not None:
        return  # the checker's own comparison already says why nothing can be compared
    for spec in dict.fromkeys(ctx.options.runtimes):
        yield from _one_runtime(ctx, spec)


def _declared(ctx: Context) -> list[str]:
    return list(ctx.options.providers or views.providers(ctx.spec.runtime))


def _one_runtime(ctx: Context, spec: str) -> Iterator[Finding]:
    runtime = ctx.spec.runtime
    try:
        wanted = parse_spec(spec)
        declared_version = runtime.version if runtime is not None else None
        version = choose(wanted, declared_version, ctx.options.offline, ctx.options.find_links)
        env = ensure(wanted.package, version, ctx.options.offline, ctx.options.find_links)
        worker = Worker(env.python, env.label, ctx.options.case_timeout_s)
    except (RuntimeSpecError, WorkerError) as exc:
        label = spec if "==" in spec or spec[:1].isdigit() else f"onnxruntime {spec}"
        ctx.runtime_sets.append(RuntimeSet(label, "", "", CPU, error=str(exc)))
        yield F.error(F.RUNTIME_INSTALL, f"--runtime {spec}: {exc}", **ctx.where("runtime", "version"))
        return
    try:
        declared = _declared(ctx)
        for name in declared:
            if name not in worker.providers:
                offered = ", ".join(worker.providers) or "none"
                yield F.info(
                    F.RUNTIME_PROVIDER,
                    f"[{env.label}] execution provider {name} is not available there (it offers {offered}); "
                    "its set was not run",
                    **ctx.where("runtime", "execution_providers"),
                    runtime=env.label,
                )
        others = [p for p in dict.fromkeys(declared) if p != CPU and p in worker.providers]
        cpu = _CpuOutputs(views.reference_rules(ctx.spec)) if others else None
        yield from _one_set(ctx, worker, env.package, env.version, CPU, cpu)
        for provider in others:
            yield from _one_set(ctx, worker, env.package, env.version, provider, cpu)
        for provider in others:  # the CPU provider's placement is this machine's to record
            yield from placed(ctx, env.label, provider, worker)
    finally:
        worker.close()


@dataclass
class _CpuOutputs:
    """The CPU provider's outputs of every graph, to hold another provider of the same runtime to them."""

    rules: dict[str, list[RuleBase]]  # graph -> its rules against the reference
    outputs: dict[str, dict[str, Arrays]] = field(default_factory=dict)  # graph -> case -> output -> array
    sets: dict[str, RuleSet] = field(default_factory=dict)  # graph -> its rules, against the CPU's outputs

    def keep(self, graph: str, case: Case, outputs: Arrays | None) -> None:
        if outputs is not None:
            self.outputs.setdefault(graph, {})[case.name] = outputs

    def judge(self, ctx: Context, graph: str, case: Case, outputs: Arrays | None) -> None:
        if graph not in self.sets and graph in self.rules:
            cpu = self.outputs.get(graph, {})
            self.sets[graph] = RuleSet(graph, CPU, entries(self.rules[graph]), lambda c: cpu.get(c.name), _NO_CPU)
        if graph in self.sets:
            self.sets[graph].add_case(case, outputs, "it failed on this case")


def _one_set(
    ctx: Context, worker: Worker, package: str, version: str, provider: str, cpu: _CpuOutputs | None
) -> Iterator[Finding]:
    label = f"{package} {version} {provider.removesuffix('ExecutionProvider')}"
    chosen = [provider] if provider == CPU else [provider, CPU]
    options = views.session_options(ctx.spec.runtime)
    result = RuntimeSet(label, package, version, provider)
    run = Run(ctx, Runtime(chosen, options), NoProgress(), result.comparisons)
    run.opener, run.elsewhere = remote_opener(worker), True
    if cpu is not None:
        run.observe = cpu.keep if provider == CPU else functools.partial(cpu.judge, ctx)
    for finding in judge_all(run):
        yield for_runtime(label, finding)
    if cpu is not None and provider != CPU:
        names = [c.name for c in ctx.loaded_cases]
        for rules in cpu.sets.values():  # the same rules, against the CPU provider's outputs
            comparison, found = judge_set(ctx, rules, names)
            result.comparisons.append(comparison)
            for finding in found:
                yield for_runtime(label, finding)
        cpu.sets.clear()
    ctx.runtime_sets.append(result)
