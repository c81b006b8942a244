"""The declared runtime: a valid specifier, able to load the graph, and the machine doing the verifying."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.readers.environment import installed_version
from checker.readers.graphinfo import opsets
from checker.readers.support import Release, admitted, oldest_loading, releases


def runtime_stage(ctx: Context) -> Iterator[Finding]:
    runtime = ctx.spec.runtime
    yield from threads_findings(ctx, views.session_options(runtime))
    if runtime is None:
        return
    for key, package, stated in (("web", "onnxruntime-web", runtime.web), ("node", "onnxruntime-node", runtime.node)):
        if stated is not None and not _specifier(stated):
            yield F.error(
                F.MANIFEST_SCHEMA,
                f"runtime.{key} '{stated}' is not a PEP 440 specifier of {package} releases (e.g. '>=1.30,<2')",
                **ctx.where("runtime", key),
            )
    if not runtime.version:
        return
    try:
        spec = SpecifierSet(runtime.version)
    except InvalidSpecifier:
        yield F.error(
            F.MANIFEST_SCHEMA,
            f"runtime.version '{runtime.version}' is not a PEP 440 specifier (e.g. '>=1.17,<2')",
            **ctx.where("runtime", "version"),
        )
        return
    yield from _opset(ctx, spec, runtime.version)
    yield from _installed(ctx, spec, runtime.version)
    yield from providers_findings(ctx)


def _specifier(text: str) -> bool:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return False
    return True


def threads_findings(ctx: Context, options: dict[str, Any]) -> Iterator[Finding]:
    """Thread counts above this machine's CPUs are lowered to them when the graphs run; say so."""
    from checker.compare.session import clamped_threads

    for key, (asked, used) in clamped_threads(options).items():
        yield F.info(
            F.RUNTIME_THREADS,
            f"runtime.session_options.{key} is {asked}, but this machine has {used} CPUs: the graphs run with {used}",
            **ctx.where("runtime", "session_options", key),
        )


def _graphs(ctx: Context) -> Iterator[tuple[str, Any]]:
    if ctx.graph is not None:
        yield "the graph", ctx.graph
    for variant in ctx.variant_models.items():
        yield f"variant '{variant[0]}'", variant[1]


def _opset(ctx: Context, spec: SpecifierSet, text: str) -> Iterator[Finding]:
    known = admitted(spec)
    if not known:
        newest = releases()[-1].minor
        yield F.warning(
            F.RUNTIME_VERSION,
            f"runtime.version '{text}' admits no onnxruntime release this checker "
            f"knows (its table ends at {newest}); the opset check could not be made",
            **ctx.where("runtime", "version"),
        )
        return
    oldest = known[0]
    for label, model in _graphs(ctx):
        yield from _opset_of(ctx, label, model, oldest, text)


def _opset_of(ctx: Context, label: str, model: Any, oldest: Release, text: str) -> Iterator[Finding]:
    ir, domains = int(model.ir_version), opsets(model)
    opset, ml = domains.get("ai.onnx"), domains.get("ai.onnx.ml")
    if oldest.loads(ir, opset, ml):
        return
    needs = f"IR {ir}, ai.onnx opset {opset}" + (f", ai.onnx.ml opset {ml}" if ml else "")
    can = oldest_loading(ir, opset, ml)
    fix = (
        f"the oldest release that can is {can.minor}: declare '>={can.minor}'"
        if can
        else "no onnxruntime release in the table can"
    )
    msg = (
        f"{label} needs {needs}; onnxruntime {oldest.minor}, the oldest release '{text}' admits, loads up to "
        f"IR {oldest.max_ir} and opset {oldest.max_opset}; {fix}"
    )
    yield F.error(
        F.RUNTIME_OPSET,
        msg,
        **ctx.where("runtime", "version"),
        oldest_admitted=oldest.minor,
        oldest_loading=can.minor if can else None,
    )


def _installed(ctx: Context, spec: SpecifierSet, text: str) -> Iterator[Finding]:
    here = installed_version("onnxruntime")
    if here is None:
        return
    if not spec.contains(here, prereleases=True):
        yield F.warning(
            F.RUNTIME_VERSION,
            f"this machine verifies with onnxruntime {here}, outside the declared "
            f"'{text}': the verdict may not hold on the target",
            **ctx.where("runtime", "version"),
        )


def providers_findings(ctx: Context) -> Iterator[Finding]:
    """Providers asked for (the command line's override, else the manifest's) that this machine lacks."""
    from checker.compare.session import resolve_runtime

    declared = views.providers(ctx.spec.runtime)
    if not declared and not ctx.options.providers:
        return
    for name in resolve_runtime(ctx.spec.runtime, ctx.options.providers).unavailable:
        keys: tuple[str | int, ...] = ("runtime", "execution_providers")
        if name in declared:
            keys = (*keys, declared.index(name))
        yield F.warning(
            F.RUNTIME_PROVIDER,
            f"execution provider {name} is not available here; the comparison "
            "falls back to the next one (CPUExecutionProvider last)",
            **ctx.where(*keys),
        )
