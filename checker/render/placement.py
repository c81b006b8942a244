"""Where the nodes ran, and how far each platform is from the native run, as sentences every renderer shows.

Drawn from the report alone (a report read back from a file may hold anything: each part is taken only when it
has the expected shape); the sentences are plain strings, to be escaped by whoever draws them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checker.reports.model import Fingerprint, mappings


def _number(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return "?"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def placement_sentences(bundle: Mapping[str, Any]) -> list[str]:
    """'[onnxruntime-openvino 1.24.1] int8: OpenVINOExecutionProvider takes 23 of 23 nodes (1 partition)'."""
    out = []
    for entry in mappings(bundle.get("placement")):
        providers = entry["providers"] if isinstance(entry.get("providers"), Mapping) else {}
        total = _number(entry.get("nodes"))
        parts = []
        if entry.get("provider") not in providers:
            parts.append(f"{entry.get('provider')} takes none of {total} nodes")
        for name, figures in providers.items():
            figures = figures if isinstance(figures, Mapping) else {}
            partitions = figures.get("partitions")
            noun = "partition" if partitions == 1 else "partitions"
            taken = _number(figures.get("nodes"))
            parts.append(f"{name} takes {taken} of {total} nodes ({_number(partitions)} {noun})")
        forbid = entry.get("forbid")
        if isinstance(forbid, Mapping):
            parts.append("no fallback: proven" if forbid.get("opened") else "no fallback: onnxruntime refuses")
        out.append(f"[{entry.get('runtime')}] {entry.get('graph')}: " + "; ".join(parts))
    return out


def usability_sentences(bundle: Mapping[str, Any]) -> list[str]:
    """'int8, CoreML MLProgram: takes 4 of 23 nodes in 4 partitions, suitable: NO — <the tool's words>'."""
    out = []
    for e in mappings(bundle.get("usability")):
        partitions = e.get("partitions")
        text = (
            f"{e.get('graph')}, {e.get('ep')}: takes {_number(e.get('supported'))} of {_number(e.get('nodes'))} "
            f"nodes in {_number(partitions)} partition{'' if partitions == 1 else 's'}, "
            f"suitable: {e.get('suitability')}"
        )
        fixed = e.get("fixed_shape")
        if isinstance(fixed, Mapping):
            text += (
                f"; with fixed shapes {_number(fixed.get('supported'))} nodes in {_number(fixed.get('partitions'))}"
                f" partitions, {e.get('fixed_shape_suitability')}"
            )
        said = (fixed.get("recommendation") if isinstance(fixed, Mapping) else None) or e.get("recommendation")
        if said:
            text += f" — {said}"
        out.append(text)
    return out


def native_sentences(bundle: Mapping[str, Any]) -> list[str]:
    """'platform x86-64-v3, int8: 44 of 80 output values differ from the native run, up to 0.82'; an engine's or
    device's set first says what it ran in ('platform browser-webgpu ran in Chromium 156.0.8078.114, ...')."""
    out = []
    for runtime in mappings(bundle.get("runtimes")):
        fingerprint = runtime.get("fingerprint")
        if isinstance(fingerprint, Mapping) and isinstance(fingerprint.get("engine"), str):
            out.append(f"{runtime.get('runtime')} ran in {Fingerprint.from_dict(fingerprint).words()}")
        platform = runtime.get("platform")
        against = platform.get("against_native") if isinstance(platform, Mapping) else None
        if not isinstance(against, Mapping):
            continue
        for graph, figure in against.items():
            if not isinstance(figure, Mapping):
                continue
            differ, of = figure.get("differ"), _number(figure.get("of"))
            if not differ:
                out.append(f"{runtime.get('runtime')}, {graph}: all {of} output values equal the native run's")
            else:
                out.append(
                    f"{runtime.get('runtime')}, {graph}: {_number(differ)} of {of} output values differ from the "
                    f"native run, up to {_number(figure.get('max_abs'))}"
                )
    return out
