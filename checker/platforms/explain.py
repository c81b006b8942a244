"""Why a graph holds on one platform and fails on another, when the cause is a known kernel effect, with the
remedy measured on the platform where it fails.

Known: a U8S8 quantized graph (activations uint8, weights int8) on an x86 CPU without VNNI. onnxruntime's
AVX2 kernels sum pairs of uint8 x int8 products into int16 (vpmaddubsw), which saturates when both are
large; VNNI and aarch64 kernels sum into int32. `session.x64quantprecision=1` makes the AVX2 kernels
exact (onnxruntime PR #12088), and re-quantizing with `reduce_range` (7-bit weights) or U8U8 avoids it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.compare.quantizing import requantize_to
from checker.errors import BundleError
from checker.findings import Finding
from checker.manifest import views
from checker.reports.model import Comparison, RuntimeSet

if TYPE_CHECKING:
    import onnx

    from checker.context import Context

PRECISION = {"session.x64quantprecision": "1"}
_UINT8, _INT8 = 2, 3
_OWN_WORDS = {"pass": "passes", "fail": "fails too"}
REDUCE_RANGE = {"reduce_range": True}
# The set judged again on the platform: with these session config entries, and these graph files in place of
# the shipped ones (a re-quantized variant).
Rerun = Callable[[dict[str, str], dict[Path, Path]], RuntimeSet]


def is_u8s8(model: onnx.ModelProto) -> bool:
    """Activations quantized to uint8 and weights to int8: the pairing whose x86 kernels saturate without VNNI."""
    types = {t.name: t.data_type for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    types[node.output[0]] = attr.t.data_type
    u8 = s8 = False
    for node in model.graph.node:
        inputs = list(node.input)
        if node.op_type == "QuantizeLinear" and len(inputs) > 2:
            u8 |= types.get(inputs[2]) == _UINT8
        elif node.op_type == "DequantizeLinear" and inputs:
            s8 |= types.get(inputs[0]) == _INT8
        elif node.op_type in ("QLinearConv", "QLinearMatMul") and len(inputs) > 5:
            u8 |= types.get(inputs[2]) == _UINT8
            s8 |= types.get(inputs[3]) == _INT8 or types.get(inputs[5]) == _INT8
        elif node.op_type == "DynamicQuantizeLinear":
            u8 = True
    return u8 and s8


def _statuses(comparisons: list[Comparison]) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in comparisons:
        if c.skipped is None:
            out[c.graph] = "fail" if out.get(c.graph) == "fail" else c.status
    return out


def _figures(comparisons: list[Comparison], graph: str) -> list[dict[str, Any]]:
    return [
        {"against": c.against, "output": r.output, "check": r.check, "measured": r.measured,
         "threshold": r.threshold, "passed": r.passed}
        for c in comparisons if c.graph == graph for r in c.rules
    ]  # fmt: skip


def _shown(figures: list[dict[str, Any]]) -> str:
    parts = []
    for f in figures:
        measured = "-" if f["measured"] is None else f"{f['measured']:.4g}"
        limit = "" if f["threshold"] is None else f" (limit {f['threshold']:.4g})"
        parts.append(f"{f['output']}/{f['check']} {measured}{limit} {'✓' if f['passed'] else '✗'}")
    return ", ".join(parts)


def explain(ctx: Context, result: RuntimeSet, rerun: Rerun) -> Iterator[Finding]:
    """A finding per variant that fails on this platform for a cause this module knows, with the remedy measured
    here. It does not wait for the checker's own run to pass: on a machine of the same class both fail alike."""
    record = result.platform
    here, own = _statuses(result.comparisons), _statuses(ctx.comparisons)
    failing = [g for g, status in here.items() if status == "fail"]
    known = [g for g in failing if g in ctx.variant_models and is_u8s8(ctx.variant_models[g])]
    if not known or record is None or not record.x86_without_vnni:
        return
    remedied = rerun(PRECISION, {})
    for graph in known:
        before, after = _figures(result.comparisons, graph), _figures(remedied.comparisons, graph)
        holds = _holds(after)
        requantized = _reduce_range(ctx, graph, rerun)
        verdict = "holds" if holds else "still fails"
        yield F.warning(
            F.PLATFORM_KERNEL,
            f"[{result.runtime}] variant '{graph}' fails here and {_OWN_WORDS.get(own.get(graph, ''), 'is not judged')}"
            " in the checker's own run: "
            "it is U8S8 (activations uint8, weights int8), whose sums saturate in onnxruntime's x86 kernels without "
            f"VNNI. Here: {_shown(before)}. With session.x64quantprecision=1 it {verdict}: {_shown(after)}. "
            + _requantized_words(requantized),
            **ctx.where("variants"),
            graph=graph,
            platform=record.name,
            cause="u8s8_without_vnni",
            figures=before,
            remedy={"session_config": dict(PRECISION), "passes": holds, "figures": after},
            requantized=requantized,
        )


def _holds(figures: list[dict[str, Any]]) -> bool:
    return bool(figures) and all(f["passed"] for f in figures)


def _reduce_range(ctx: Context, graph: str, rerun: Rerun) -> dict[str, Any]:
    """The variant re-quantized by its recorded transform with reduce_range=True (7-bit weights, whose pair sums
    fit in int16), then judged on this platform by the same rules: the remedy measured where it is needed."""
    import onnxruntime

    variant = views.variant(ctx.spec, graph)
    shipped = ctx.path(variant.graph.path) if variant is not None else None
    base: dict[str, Any] = {"settings": dict(REDUCE_RANGE), "onnxruntime": onnxruntime.__version__}
    if variant is None or shipped is None or ctx.graph_path is None:
        return {**base, "measured": False, "reason": "the variant records no transform to re-run"}
    transform = variant.transform
    if transform.settings.get("reduce_range") is True:
        return {**base, "measured": False, "reason": "the variant is already quantized with reduce_range=True"}
    with tempfile.TemporaryDirectory(prefix="checker-reduce-range-") as work:
        out = Path(work) / "reduce_range.onnx"
        try:
            requantize_to(transform, ctx.loaded_cases, ctx.graph_path, out, REDUCE_RANGE)
        except BundleError as exc:
            return {**base, "measured": False, "reason": str(exc)}
        figures = _figures(rerun({}, {shipped: out}).comparisons, graph)
    return {**base, "measured": True, "passes": _holds(figures), "figures": figures}


def _requantized_words(requantized: Mapping[str, Any]) -> str:
    if not requantized.get("measured"):
        return f"Re-quantizing with reduce_range=True was not measured: {requantized.get('reason')}"
    verdict = "holds" if requantized.get("passes") else "still fails"
    return (
        f"Re-quantized by the recorded transform with reduce_range=True (onnxruntime {requantized['onnxruntime']}) "
        f"it {verdict}: {_shown(requantized['figures'])}"
    )
