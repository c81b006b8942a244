"""Where the nodes ran, and how far each platform is from the native run, as sentences every renderer shows.

Drawn from the report alone; the sentences are plain strings, to be escaped by whoever draws them.
"""

from __future__ import annotations

from checker.reports.model import BundleReport


def _number(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def placement_sentences(bundle: BundleReport) -> list[str]:
    """'[onnxruntime-openvino 1.24.1] int8: OpenVINOExecutionProvider takes 23 of 23 nodes (1 partition)'."""
    out = []
    for entry in bundle.placement:
        total = _number(entry.nodes)
        parts = []
        if entry.provider not in entry.providers:
            parts.append(f"{entry.provider} takes none of {total} nodes")
        for name, taken in entry.providers.items():
            noun = "partition" if taken.partitions == 1 else "partitions"
            parts.append(f"{name} takes {_number(taken.nodes)} of {total} nodes ({_number(taken.partitions)} {noun})")
        if entry.forbid is not None:
            parts.append("no fallback: proven" if entry.forbid.opened else "no fallback: onnxruntime refuses")
        out.append(f"[{entry.runtime}] {entry.graph}: " + "; ".join(parts))
    return out


def usability_sentences(bundle: BundleReport) -> list[str]:
    """'int8, CoreML MLProgram: takes 4 of 23 nodes in 4 partitions, suitable: NO — <the tool's words>'."""
    out = []
    for e in bundle.usability:
        text = (
            f"{e.graph}, {e.ep}: takes {_number(e.supported)} of {_number(e.nodes)} "
            f"nodes in {_number(e.partitions)} partition{'' if e.partitions == 1 else 's'}, "
            f"suitable: {e.suitability}"
        )
        fixed = e.fixed_shape
        if fixed is not None:
            text += (
                f"; with fixed shapes {_number(fixed.supported)} nodes in {_number(fixed.partitions)}"
                f" partitions, {e.fixed_shape_suitability}"
            )
        said = (fixed.recommendation if fixed is not None else None) or e.recommendation
        if said:
            text += f" — {said}"
        out.append(text)
    return out


def native_sentences(bundle: BundleReport) -> list[str]:
    """'platform x86-64-v3, int8: 44 of 80 output values differ from the native run, up to 0.82'; an engine's or
    device's set first says what it ran in ('platform browser-webgpu ran in Chromium 156.0.8078.114, ...')."""
    out = []
    for runtime in bundle.runtimes:
        if runtime.fingerprint is not None:
            out.append(f"{runtime.runtime} ran in {runtime.fingerprint.words()}")
        against = runtime.platform.against_native if runtime.platform is not None else None
        for graph, figure in (against or {}).items():
            of = _number(figure.of)
            if not figure.differ:
                out.append(f"{runtime.runtime}, {graph}: all {of} output values equal the native run's")
            else:
                out.append(
                    f"{runtime.runtime}, {graph}: {_number(figure.differ)} of {of} output values differ from the "
                    f"native run, up to {_number(figure.max_abs)}"
                )
    return out
