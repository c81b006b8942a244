"""Each variant's gain over the baseline as one sentence, for every renderer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checker.reports.model import mappings


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def gain_sentence(gain: Mapping[str, Any]) -> str:
    """E.g. "int8: 3.9x smaller (66,000 of 262,000 bytes); 1.8x faster (95 % 1.7 to 1.9, 48 rounds, ...)"."""
    size, latency = _map(gain.get("size")), _map(gain.get("latency"))
    smaller = _number(size.get("smaller"))
    parts = [f"{smaller:.3g}x smaller" if smaller is not None else "size unknown"]
    if isinstance(size.get("variant_bytes"), int) and isinstance(size.get("baseline_bytes"), int):
        parts[0] += f" ({size['variant_bytes']:,} of {size['baseline_bytes']:,} bytes)"
    faster = _number(latency.get("faster"))
    interval = _map(latency.get("interval"))
    low, high = _number(interval.get("low")), _number(interval.get("high"))
    threads = latency.get("threads")
    shown = ", ".join(f"{k}={v}" for k, v in threads.items()) if isinstance(threads, Mapping) else str(threads)
    if faster is not None and low is not None and high is not None:
        parts.append(
            f"{faster:.3g}x faster (95 % {low:.3g} to {high:.3g}, {latency.get('rounds')} paired rounds, "
            f"threads: {shown})"
        )
    elif latency.get("skipped"):
        parts.append(f"speed not measured: {latency['skipped']}")
    if latency.get("not_device_figure"):
        parts.append(f"not a device figure: {latency['not_device_figure']}")
    return f"{gain.get('variant', '?')}: " + "; ".join(parts)


def gain_sentences(bundle: Mapping[str, Any]) -> list[str]:
    return [gain_sentence(g) for g in mappings(bundle.get("gains"))]
