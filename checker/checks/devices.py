"""Any device, by its outputs: each --device-outputs folder judged as one more platform (checks/platforms.py judges
the ones the checker can run itself).

The folder is what a device kit's runner wrote on the device (readers/deviceoutputs.py). Its outputs go through
the comparison stage's own judging, case by case (platforms/replay.py), so a device is held to the same rules;
the set's fingerprint is what device.json says. A case, graph or output the device did not send is
`device.outputs`; anything it sent that the kit did not ask for is `device.extra`. Tensors the application's
own preprocessing made from the raw inputs are judged like stored tensors are (input fidelity) and a difference
is explained by the same one-edit search (`device.preprocessing`). A declared device with no folder is not_run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.checks.comparison import Run, judge_all, not_run
from checker.checks.envelope import envelope_points, judge_elsewhere
from checker.checks.platforms import settled_findings
from checker.compare.envelope import as_case
from checker.compare.progress import NoProgress
from checker.compare.session import Runtime
from checker.context import Case, Context
from checker.findings import Finding
from checker.manifest import views
from checker.platforms.against import NativeDiff
from checker.platforms.catalog import DEVICE, Platform, declared, engine_platform
from checker.platforms.replay import Replay
from checker.platforms.settle import Side
from checker.readers.deviceoutputs import (
    DEVICE_JSON,
    DeviceFolder,
    DeviceFolderError,
    output_path,
    read_folder,
    stem,
    tensor_path,
)
from checker.readers.graphinfo import graph_outputs
from checker.reports.model import Fingerprint, NotRun, RuntimeSet, for_runtime
from checker.reports.parts.placement import PlatformRecord

_SHOWN = 10


def devices_stage(ctx: Context) -> Iterator[Finding]:
    waiting = [p for p in declared(ctx.spec.runtime) if p.engine == DEVICE]
    folders = ctx.options.device_outputs
    if folders and not_run(ctx) is None:
        taken: set[str] = set()
        for folder in folders:
            yield from _one_device(ctx, folder, waiting, taken)
    for platform in waiting:
        reason = "no --device-outputs folder was given for it (checker device-kit makes the kit its runner needs)"
        ctx.not_run.append(NotRun(_label(platform), reason))
        yield F.info(F.PLATFORM_NOT_RUN, f"{_label(platform)} was not run: {reason}", platform=platform.name)


def _label(platform: Platform) -> str:
    return f"platform {platform.name}" if platform.name == DEVICE else f"platform {platform.name} (device)"


def _matched(folder: DeviceFolder, path: Path, waiting: list[Platform], taken: set[str]) -> Platform:
    """The declared device this folder is (device.json's `platform`, or the only one declared), else a device
    named by device.json's `device` or the folder (with a number when two folders name the same)."""
    named = folder.device.get("platform")
    for platform in waiting:
        if platform.name == named or (named is None and len(waiting) == 1):
            waiting.remove(platform)
            taken.add(platform.name)
            return platform
    name = stem(str(named or folder.device.get("device") or path.name or DEVICE))[:60].lower()
    unique, count = name, 1
    while unique in taken:
        count += 1
        unique = f"{name}-{count}"
    taken.add(unique)
    return engine_platform(DEVICE, unique)


def _one_device(ctx: Context, path: Path, waiting: list[Platform], taken: set[str]) -> Iterator[Finding]:
    try:
        folder = read_folder(path)
    except DeviceFolderError as exc:
        yield F.error(F.DEVICE_OUTPUTS, f"--device-outputs {path}: {exc}", folder=str(path))
        return
    platform = _matched(folder, path, waiting, taken)
    label = _label(platform)
    if folder.refused:
        yield F.error(
            F.DEVICE_OUTPUTS,
            f"[{label}] {len(folder.refused)} entries of {path} are no regular files (links, devices) and were not "
            f"read: {_shown(folder.refused)}",
            platform=platform.name, refused=folder.refused[:50],
        )  # fmt: skip
    said = folder.device.get("release_digest")
    if isinstance(said, str) and ctx.digest is not None and said != ctx.digest:
        yield F.error(
            F.DEVICE_OUTPUTS,
            f"[{label}] device.json says its outputs were made from the kit of release {said}, not of this bundle "
            f"({ctx.digest}): make a kit of this release with `checker device-kit` and run it again",
            platform=platform.name,
        )
    graphs = _graphs(ctx)
    backend = str(folder.device.get("backend") or "unknown")
    points, _ = envelope_points(ctx)  # the kit's envelope cases: what the device ran at the declared sizes
    replay = Replay(folder, [*ctx.loaded_cases, *(as_case(p) for p in points)], graphs, backend)
    result = RuntimeSet(
        label, str(folder.device.get("runtime") or "unknown"), str(folder.device.get("version") or ""), backend,
        platform=PlatformRecord.from_dict({**platform.to_dict(), "how": f"outputs sent back from {path.name}",
                                           "machine": _machine(folder), "cpu_features": [],
                                           "onnxruntime": str(folder.device.get("version") or "")}),
        fingerprint=_fingerprint(folder),
    )  # fmt: skip
    options = views.session_options(ctx.spec.runtime)
    native = NativeDiff(ctx, options)
    run = Run(ctx, Runtime([backend], options), NoProgress(), result.comparisons)
    run.opener, run.elsewhere, run.replayed, run.observe = replay.opener, True, True, native.observe
    try:
        found = [for_runtime(label, f) for f in judge_all(run)]
    finally:
        native.close()
    if result.platform is not None and native.figures:
        result.platform.against_native = native.figures
    ctx.runtime_sets.append(result)
    yield from found
    if points:
        record, more = judge_elsewhere(ctx, replay.opener, run.runtime, label, platform.name, native.sentinels)
        if result.platform is not None and record:
            result.platform.envelope = record
        yield from more
    yield from native.sentinels.findings(label, platform.name)
    said = result.fingerprint.to_dict() if result.fingerprint else {}
    side = Side(label, platform.name, replay.opener, run.runtime, False, said)
    yield from settled_findings(ctx, result, side, platform.name)
    yield from _missing(replay, label, platform)
    yield from _extra(ctx, folder, graphs, label, platform, [p.case_name for p in points])
    yield from _tensors(ctx, folder, label, platform)


def _graphs(ctx: Context) -> dict[Path, tuple[str, Any]]:
    """Each graph file the comparison opens -> (its name, its parsed model)."""
    out: dict[Path, tuple[str, Any]] = {}
    if ctx.graph_path is not None and ctx.graph is not None:
        out[ctx.graph_path] = ("baseline", ctx.graph)
    for variant in views.variants(ctx.spec):
        path = ctx.path(variant.graph.path)
        if path is not None and variant.name in ctx.variant_models:
            out[path] = (variant.name, ctx.variant_models[variant.name])
    return out


def _machine(folder: DeviceFolder) -> str:
    return str(folder.device.get("machine") or folder.device.get("device") or "")[:300]


def _fingerprint(folder: DeviceFolder) -> Fingerprint:
    said = folder.device

    def word(key: str, limit: int = 300) -> str | None:
        value = said.get(key)
        return str(value)[:limit] if value is not None and str(value) else None

    return Fingerprint(
        engine=DEVICE,
        package=word("runtime", 200) or "unknown",
        package_version=word("version", 200) or "",
        backend=word("backend", 200) or "unknown",
        device=word("device"),
        os=word("os"),
        node=word("node"),
    )


def _missing(replay: Replay, label: str, platform: Platform) -> Iterator[Finding]:
    for graph, cases in replay.missing.items():
        unique = list(dict.fromkeys(cases))
        yield F.error(
            F.DEVICE_OUTPUTS,
            f"[{label}] the device sent no outputs of graph '{graph}' for {len(unique)} case(s): {_shown(unique)}",
            platform=platform.name, graph=graph, cases=unique[:100],
        )  # fmt: skip
    for problem in dict.fromkeys(replay.read_errors):
        yield F.error(F.DEVICE_OUTPUTS, f"[{label}] {problem}", platform=platform.name)


def _extra(
    ctx: Context,
    folder: DeviceFolder,
    graphs: dict[Path, tuple[str, Any]],
    label: str,
    platform: Platform,
    envelope: list[str],
) -> Iterator[Finding]:
    """Files the kit does not ask for: a case, graph or output of another release, or a typo in a runner."""
    names = [*(ctx.case_order or [c.name for c in ctx.loaded_cases]), *envelope]
    expected = {DEVICE_JSON}
    for graph, model in graphs.values():
        outputs = [o.name for o in graph_outputs(model)]
        expected.update(output_path(graph, case, out) for case in names for out in outputs)
    inputs = [e.name for e in views.inputs(ctx.spec)]
    expected.update(tensor_path(case, name) for case in names for name in inputs)
    extra = sorted(folder.files - expected)
    if extra:
        cases = {stem(c) for c in names}
        strangers = sorted({p.split("/")[2] for p in extra if p.count("/") >= 3 and p.split("/")[2] not in cases})
        about = f"; case folders the kit has not: {_shown(strangers)}" if strangers else ""
        yield F.warning(
            F.DEVICE_EXTRA,
            f"[{label}] {len(extra)} file(s) the device kit does not ask for: {_shown(extra)}{about}",
            platform=platform.name, files=extra[:100], cases=strangers[:100],
        )  # fmt: skip


def _shown(items: list[str]) -> str:
    shown = ", ".join(repr(i) for i in items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _tensors(ctx: Context, folder: DeviceFolder, label: str, platform: Platform) -> Iterator[Finding]:
    """The application's own tensors, made on the device from each raw input, against the declared
    preprocessing of the same raw file; a difference explained by the one-edit search."""
    for case in ctx.loaded_cases:
        for name, rel in case.raw.items():
            sent = tensor_path(case.name, name)
            if sent in folder.files:
                yield from _one_tensor(ctx, folder, case, name, rel, sent, label, platform)


def _one_tensor(
    ctx: Context, folder: DeviceFolder, case: Case, name: str, rel: str, sent: str, label: str, platform: Platform
) -> Iterator[Finding]:
    from checker.checks.prepared import prepared
    from checker.preprocess.difference import difference
    from checker.preprocess.errors import PreprocessError
    from checker.preprocess.rebuild import REBUILT_KINDS, open_source

    where = ctx.where(*case.where, "raw", name)
    try:
        tensor = folder.load(sent)
    except DeviceFolderError as exc:
        yield F.error(F.DEVICE_OUTPUTS, f"[{label}] {exc}", platform=platform.name, **where)
        return
    inputs = prepared(ctx)
    path = ctx.path(rel)
    if inputs.entry(name) is None or inputs.kind(name) not in REBUILT_KINDS or path is None:
        return  # what fidelity cannot rebuild from the raw file (custom, audio without steps) is not judged here
    try:
        source = open_source(inputs, name, path, rel)
        rebuilt = source.build() if source is not None else {}
    except PreprocessError as exc:
        ctx.not_run.append(NotRun(f"{label}: preprocessing of input '{name}'", str(exc)))
        return
    if source is None or name not in rebuilt:
        return
    kind = inputs.kind_of(inputs.source_name(name))
    diff = difference(rebuilt[name], tensor, source.tolerance, first=kind.tokens, relative=kind.relative_tolerance)
    if diff is None:
        return
    search = kind.explain(source, name, tensor, source.tolerance)
    if not diff.same_shape:
        how = f"has shape {list(tensor.shape)} where the declared preprocessing makes {list(diff.rebuilt_shape)}"
    else:
        how = (
            f"differs from the declared preprocessing of {rel} by up to {diff.largest:.4g} at {list(diff.index or ())}"
            f" ({diff.count} of {diff.size} values beyond the tolerance {source.tolerance:.4g})"
        )
    why = (
        f"the application's tensor matches the declared preprocessing {search.found}" if search.found
        else kind.unexplained
    )  # fmt: skip
    yield F.error(
        F.DEVICE_PREPROCESSING,
        f"[{label}] case '{case.name}', input '{name}': the tensor the application made on the device ({sent}) "
        f"{how}; {why}",
        **where,
        platform=platform.name, case=case.name, input=name, raw=rel, explanation=search.found,
        fits=[{"edit": f.description, "mean_difference": f.mean, "largest_difference": f.largest, "exact": f.exact}
              for f in search.fits],
    )  # fmt: skip
