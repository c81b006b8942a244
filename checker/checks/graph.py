"""The graph: parse, external data, ONNX checker, inputs/outputs against the manifest, producer."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from checker import findings as F
from checker.bundle.paths import BundlePathError, check_relative
from checker.context import Context
from checker.errors import first_line
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.inputs import Input
from checker.manifest.model.release import Graph
from checker.manifest.model.tensors import Output
from checker.readers.graphinfo import ExternalRef, TensorSpec, external_refs, graph_inputs, graph_outputs

MAX_PROTO_BYTES = 2 << 30  # protobuf's own limit for one message


def graph_stage(ctx: Context) -> Iterator[Finding]:
    graph = ctx.spec.graph
    if graph is not None and graph.path:
        model = yield from _inspect(ctx, graph, graph.path, "the graph")
        ctx.graph = model
        ctx.graph_path = ctx.path(graph.path) if model is not None else None
        if model is not None:
            yield from io_findings(ctx, model, "the graph")
    if graph is None or graph.producer is None:
        yield F.warning(
            F.GRAPH_PRODUCER,
            "graph.producer is absent: record the exporter, its version and settings so the export can be reproduced",
            **ctx.where("graph"),
        )
    yield from _variants(ctx)


def _variants(ctx: Context) -> Iterator[Finding]:
    bad = ctx.bad_graphs
    for variant in views.variants(ctx.spec):
        model = yield from _inspect(ctx, variant.graph, variant.graph.path, variant.name)
        if model is None:
            bad.add(variant.name)
            continue
        ctx.variant_models[variant.name] = model
        # A mismatch with the manifest is an error of its own; the graph still runs, so it is still judged.
        yield from io_findings(ctx, model, f"variant '{variant.name}'")


def _inspect(ctx: Context, entry: Graph, rel: str, label: str) -> Generator[Finding, None, Any]:
    """Parse and check one graph file (`rel`, its path); yields findings, returns the model (no external data)
    or None."""
    keys = entry.at
    path = ctx.path(rel)
    if path is None:
        yield F.info(
            F.STAGE_SKIPPED,
            f"{label}: graph checks did not run: '{rel}' is unusable",
            **ctx.where(*keys, "path"),
        )
        return None
    model, problem = _parse(path)
    if model is None:
        yield F.error(F.GRAPH_INVALID, f"{label}: '{rel}' {problem}", **ctx.where(*keys, "path"))
        return None
    external = list(external_data_findings(ctx, model, entry, rel, label))
    yield from external
    if any(f.severity is F.Severity.ERROR for f in external):
        return None  # never let a library follow a reference we refused
    rejected, inferred = onnx_checks(path)
    if rejected:
        yield F.error(
            F.GRAPH_INVALID,
            f"{label}: the ONNX checker rejects '{rel}': {rejected}",
            **ctx.where(*keys, "path"),
        )
        return None
    if inferred:
        yield F.warning(
            F.GRAPH_INVALID,
            f"{label}: strict shape inference rejects '{rel}': {inferred}",
            **ctx.where(*keys, "path"),
        )
    return model


def _parse(path: Path) -> tuple[Any, str]:
    import onnx
    from google.protobuf.message import DecodeError

    size = path.stat().st_size
    if size >= MAX_PROTO_BYTES:
        return None, f"is {size} bytes: one .onnx file cannot exceed 2 GiB; store the weights as external data"
    try:
        # Always binary protobuf, as onnxruntime and the ONNX checker read it: by its extension onnx.load would
        # parse a graph named .json or .txtpb as text, which raises errors of other kinds.
        return onnx.load(str(path), format="protobuf", load_external_data=False), ""
    except (DecodeError, ValueError, RuntimeError, OSError) as exc:
        return None, f"cannot be parsed as an ONNX model ({type(exc).__name__}: {exc})"


def onnx_checks(path: Path) -> tuple[str | None, str | None]:
    """The ONNX checker's rejection, or else strict shape inference's complaint (`full_check`), from one
    check of the file by path (so that models with weights in external files, over 2 GiB, work). Complaints of
    shape inference are warnings, since onnxruntime infers shapes itself and many exported graphs run
    correctly despite them; only when the full check fails otherwise does the plain checker run again, to
    tell a rejection from an inference complaint."""
    import onnx
    from onnx.shape_inference import InferenceError

    try:
        onnx.checker.check_model(str(path), full_check=True)
    except InferenceError as exc:
        return None, first_line(exc)
    except (onnx.checker.ValidationError, ValueError, RuntimeError) as exc:
        rejected = _plain_check(path)
        return (rejected, None) if rejected else (None, first_line(exc))
    return None, None


def _plain_check(path: Path) -> str | None:
    import onnx

    try:
        onnx.checker.check_model(str(path))
    except (onnx.checker.ValidationError, ValueError, RuntimeError) as exc:
        return first_line(exc)
    return None


def external_data_findings(ctx: Context, model: Any, entry: Graph, rel: str, label: str) -> Iterator[Finding]:
    keys = entry.at
    listed = {e.path for e in entry.external_data or ()}
    refs = list(external_refs(model))
    folder = PurePosixPath(rel).parent
    used = {(folder / r.location).as_posix().removeprefix("./") for r in refs if not isinstance(r, str)}
    for rel in sorted(listed - used):
        yield F.warning(
            F.GRAPH_EXTERNAL_DATA,
            f"{label}: '{rel}' is listed in external_data, but no tensor of the graph references it",
            **ctx.where(*keys, "external_data"),
        )
    if not refs:
        return
    moved = _linked_elsewhere(ctx, rel)
    if moved is not None:  # onnxruntime reads the data beside the file it opens, which the checker would not hash
        yield F.error(
            F.GRAPH_EXTERNAL_DATA,
            f"{label}: '{rel}' is a link to '{moved}' in another folder, and onnxruntime reads its external data "
            "beside that file, not beside the path the manifest names: name the graph by its own path",
            **ctx.where(*keys, "path"),
        )
        if keys == ("graph",):
            ctx.pieces["external_weights"] = False
        return
    if not listed and keys == ("graph",):
        ctx.pieces["external_weights"] = False
        msg = (
            f"missing piece 'external_weights': the graph stores {len(refs)} tensors in external files, but "
            "graph.external_data lists none"
        )
        yield F.error(F.MISSING_PIECE, msg, **ctx.where(*keys), piece="external_weights")
    sizes: dict[str, int] = {}
    for ref in refs:
        problem = ref if isinstance(ref, str) else _ref_problem(ctx, ref, folder, listed, sizes)
        if problem:
            yield F.error(F.GRAPH_EXTERNAL_DATA, f"{label}: {problem}", **ctx.where(*keys, "path"))
            if keys == ("graph",) and listed:
                ctx.pieces["external_weights"] = False


def _linked_elsewhere(ctx: Context, rel: str) -> str | None:
    """The graph's real path, bundle-relative, where a link puts it in another folder than its name says."""
    try:
        real = ctx.resolve(rel)
    except (BundlePathError, OSError):
        return None  # the files stage says why
    named = os.path.realpath(os.path.join(ctx.real_root, os.path.dirname(rel)))  # noqa: PTH118, PTH120
    if os.path.dirname(real) == named:  # noqa: PTH120
        return None
    return os.path.relpath(real, ctx.real_root).replace(os.sep, "/")


def _ref_problem(
    ctx: Context, ref: ExternalRef, folder: PurePosixPath, listed: set[str], sizes: dict[str, int]
) -> str | None:
    try:
        check_relative(ref.location)
    except BundlePathError as exc:
        return f"tensor '{ref.tensor}' references external data outside the bundle: {exc}"
    rel = (folder / ref.location).as_posix().removeprefix("./")
    if rel not in listed:
        return f"tensor '{ref.tensor}' references '{rel}', which graph.external_data does not list"
    if rel in ctx.unusable:
        return f"tensor '{ref.tensor}' references '{rel}', which is missing or refused (see above)"
    try:
        path = ctx.resolve(rel)
    except BundlePathError as exc:
        return f"tensor '{ref.tensor}': {exc}"
    if rel not in sizes:
        sizes[rel] = path.stat().st_size if path.is_file() else -1
    return _span_problem(ref, rel, sizes[rel])


def _span_problem(ref: ExternalRef, rel: str, size: int) -> str | None:
    if size < 0:
        return f"tensor '{ref.tensor}' references '{rel}', which is not a file"
    if ref.length is not None and ref.nbytes is not None and ref.length != ref.nbytes:
        return f"tensor '{ref.tensor}' declares length {ref.length}, but its shape and type need {ref.nbytes} bytes"
    span = ref.length if ref.length is not None else ref.nbytes
    if span is not None and ref.offset + span > size:
        return (
            f"tensor '{ref.tensor}' lies outside its file: bytes {ref.offset}..{ref.offset + span} of "
            f"'{rel}', which has {size}"
        )
    return None


def io_findings(ctx: Context, model: Any, label: str) -> Iterator[Finding]:
    # A variant whose input or output is the baseline's, dtype and shape, repeats the baseline's mismatch with
    # the manifest, if any: one mistake, said once, at the baseline.
    base = ctx.graph if label != "the graph" else None
    inputs, outputs = views.inputs(ctx.spec), views.outputs(ctx.spec)
    yield from _match(ctx, "inputs", inputs, graph_inputs(model), label, every=True, base=_specs(base, graph_inputs))
    yield from _match(
        ctx, "outputs", outputs, graph_outputs(model), label, every=False, base=_specs(base, graph_outputs)
    )


def _specs(model: Any, read: Any) -> dict[str, TensorSpec]:
    return {spec.name: spec for spec in read(model)} if model is not None else {}


def _match(
    ctx: Context,
    part: str,
    declared: Sequence[Input | Output],
    actual: list[TensorSpec],
    label: str,
    every: bool,
    base: dict[str, TensorSpec],
) -> Iterator[Finding]:
    singular = part[:-1]
    by_name = {spec.name: spec for spec in actual}
    seen = set()
    for entry in declared:
        seen.add(entry.name)
        spec = by_name.get(entry.name)
        if spec is None:
            names = ", ".join(sorted(by_name)) or "none"
            yield F.error(
                F.GRAPH_IO,
                f"{label} has no {singular} '{entry.name}' (it has: {names})",
                **ctx.where(*entry.at, "name"),
            )
            continue
        twin = base.get(spec.name)
        if twin is not None and (twin.dtype, twin.shape) == (spec.dtype, spec.shape):
            continue  # the baseline's own: its findings, if any, name the mistake
        yield from _compare(ctx, entry, spec, label)
    for spec in actual:
        if every and spec.name not in seen:
            yield F.error(
                F.GRAPH_IO,
                f"{label} has {singular} '{spec.name}' ({spec.dtype}), which the manifest does not declare",
                **ctx.where(part),
            )
            if label == "the graph":  # the baseline decides the pieces; a variant's mismatch is its own error
                ctx.pieces["preprocessing"] = False
                yield F.error(
                    F.MISSING_PIECE,
                    f"missing piece 'preprocessing': nothing says how {singular} '{spec.name}' is made",
                    **ctx.where(part),
                    piece="preprocessing",
                )


def _compare(ctx: Context, entry: Input | Output, spec: TensorSpec, label: str) -> Iterator[Finding]:
    name, keys = entry.name, entry.at
    if entry.dtype and entry.dtype != spec.dtype:
        yield F.error(
            F.GRAPH_IO,
            f"'{name}': the manifest says dtype {entry.dtype}, {label} has {spec.dtype}",
            **ctx.where(*keys, "dtype"),
        )
    shape = entry.shape
    if shape is None or spec.shape is None:
        return
    if len(shape) != len(spec.shape):
        yield F.error(
            F.GRAPH_IO,
            f"'{name}': the manifest gives rank {len(shape)} {shape}, {label} has rank "
            f"{len(spec.shape)} {_show(spec.shape)}",
            **ctx.where(*keys, "shape"),
        )
        return
    pairs = enumerate(zip(shape, spec.shape))
    problems = [(axis, p) for axis, (want, have) in pairs if (p := _dim_problem(want, have))]
    layout = _permuted(shape, spec.shape) if len(problems) > 1 else None
    if layout is not None:  # one mistake: the axes written in another order, not one wrong size per axis
        yield F.error(
            F.GRAPH_IO,
            f"'{name}': the manifest's shape {_show(tuple(shape))} is {label}'s {_show(spec.shape)} with its axes "
            f"in another order{layout}: write the shape in the graph's order (and `layout` with it)",
            **ctx.where(*keys, "shape"),
            permutation=True,
        )
        return
    for axis, problem in problems:
        yield F.error(
            F.GRAPH_IO,
            f"'{name}' axis {axis}: {problem} ({label}: {_show(spec.shape)})",
            **ctx.where(*keys, "shape"),
        )


_LAYOUTS = {(0, 2, 3, 1): " (NHWC where the graph takes NCHW)", (0, 3, 1, 2): " (NCHW where the graph takes NHWC)"}


def _permuted(want: list[Any], have: tuple[Any, ...]) -> str | None:
    """When the manifest's sizes are the graph's in another order: the layout words for a known one ("" when
    none), else None. A dynamic dim matches a dynamic dim of any name."""
    key = [str(d) if isinstance(d, int) else "?" for d in want]
    graph = [str(d) if isinstance(d, int) else "?" for d in have]
    if sorted(key) != sorted(graph):
        return None
    for order, words in _LAYOUTS.items():
        if len(graph) == len(order) and [graph[k] for k in order] == key:
            return words
    return ""


def _dim_problem(want: int | str, have: int | str | None) -> str | None:
    if isinstance(want, int) and isinstance(have, int) and want != have:
        return f"the manifest says {want}, the graph fixes {have}"
    if isinstance(want, str) and isinstance(have, int):
        return f"the manifest names a dynamic dim '{want}', but the graph fixes it at {have}"
    return None


def _show(shape: tuple[Any, ...]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
