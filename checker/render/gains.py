"""Each variant's gain over the baseline as one sentence, for every renderer."""

from __future__ import annotations

from checker.reports.model import BundleReport
from checker.reports.parts.gains import Gain


def gain_sentence(gain: Gain) -> str:
    """E.g. "int8: 3.9x smaller (66,000 of 262,000 bytes); 1.8x faster (95 % 1.7 to 1.9, 48 rounds, ...)"."""
    size, latency = gain.size, gain.latency
    parts = [f"{size.ratio()} ({size.variant_bytes:,} of {size.baseline_bytes:,} bytes)"]
    threads = latency.threads
    shown = ", ".join(f"{k}={v}" for k, v in threads.items()) if isinstance(threads, dict) else threads
    timing = latency.timing
    if timing is not None:
        parts.append(f"{timing.ratio()}, {timing.rounds} paired rounds, threads: {shown})")
    elif latency.skipped:
        parts.append(f"speed not measured: {latency.skipped}")
    if latency.not_device_figure:
        parts.append(f"not a device figure: {latency.not_device_figure}")
    return f"{gain.variant}: " + "; ".join(parts)


def gain_sentences(bundle: BundleReport) -> list[str]:
    return [gain_sentence(g) for g in bundle.gains]
