"""What each variant gains over the baseline (checks.gain): its files' size, and its speed on the same cases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checker.reports.parts.judged import Interval
from checker.reports.parts.values import JsonValue, integer, json_value, mapping, number, number_or, text

SPEED_INTERVAL = "sign test on the median"


@dataclass
class Size:
    baseline_bytes: int  # the graph file and its external data files
    variant_bytes: int
    smaller: float  # baseline_bytes / variant_bytes

    def ratio(self) -> str:
        """The size in the direction that is true: "2x larger" for a variant bigger than its baseline, never
        "0.5x smaller"."""
        if self.smaller >= 1.0 or self.smaller <= 0.0:
            return f"{self.smaller:.3g}x smaller"
        return f"{1.0 / self.smaller:.3g}x larger"

    def to_dict(self) -> dict[str, Any]:
        return {"baseline_bytes": self.baseline_bytes, "variant_bytes": self.variant_bytes, "smaller": self.smaller}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Size:
        return cls(int(data["baseline_bytes"]), int(data["variant_bytes"]), number_or(data["smaller"], 0.0))


@dataclass
class PairedTiming:
    """The paired timing (compare.timing): the median of baseline time / variant time and its interval."""

    faster: float
    interval: Interval
    rounds: int | None = None
    baseline_ms: float | None = None  # the median time of one case
    variant_ms: float | None = None
    elapsed_s: float | None = None
    stopped: str | None = None  # "tight", "budget" or "rounds"

    def ratio(self) -> str:
        """The figure in the direction that is true: "1.5x slower (95 % 1.4 to 1.6", never "0.666x faster";
        the interval turned with it (a slow-down's bounds are the speed-up's, inverted)."""
        low, high = self.interval.low, self.interval.high
        if self.faster >= 1.0 or self.faster <= 0.0 or low <= 0.0 or high <= 0.0:
            return f"{self.faster:.3g}x faster (95 % {low:.3g} to {high:.3g}"
        return f"{1.0 / self.faster:.3g}x slower (95 % {1.0 / high:.3g} to {1.0 / low:.3g}"

    def to_dict(self) -> dict[str, Any]:
        i = self.interval  # written as the gain stage always has: the confidence before the method
        return {
            "faster": self.faster,
            "interval": {"low": i.low, "high": i.high, "confidence": i.confidence, "method": i.method},
            "rounds": self.rounds,
            "baseline_ms": self.baseline_ms,
            "variant_ms": self.variant_ms,
            "elapsed_s": self.elapsed_s,
            "stopped": self.stopped,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairedTiming | None:
        """The timing, or None when the latency holds no figure with its interval (speed not measured)."""
        faster, interval = number(data.get("faster")), mapping(data.get("interval"))
        low, high = number(interval.get("low")), number(interval.get("high"))
        if faster is None or low is None or high is None:
            return None
        return cls(
            faster,
            Interval(
                low, high, str(interval.get("method", SPEED_INTERVAL)), number_or(interval.get("confidence"), 0.95)
            ),
            rounds=integer(data.get("rounds")),
            baseline_ms=number(data.get("baseline_ms")),
            variant_ms=number(data.get("variant_ms")),
            elapsed_s=number(data.get("elapsed_s")),
            stopped=text(data.get("stopped")),
        )


@dataclass
class Latency:
    """The variant's speed against the baseline's: timed, or why not; and why it is no device's figure."""

    threads: dict[str, JsonValue] | str  # the session's thread options, or words for onnxruntime's default
    timing: PairedTiming | None = None
    skipped: str | None = None  # why the speed was not measured
    not_device_figure: str | None = None  # why this machine's timing is not the device's (shared or emulated)

    def to_dict(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            **({"skipped": self.skipped} if self.skipped is not None else {}),
            **(self.timing.to_dict() if self.timing is not None else {}),
            **({"not_device_figure": self.not_device_figure} if self.not_device_figure is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Latency:
        threads = data.get("threads")
        return cls(
            threads=str(threads)
            if not isinstance(threads, Mapping)
            else {str(k): json_value(v) for k, v in threads.items()},
            timing=PairedTiming.from_dict(data),
            skipped=text(data.get("skipped")),
            not_device_figure=text(data.get("not_device_figure")),
        )


@dataclass
class Gain:
    variant: str
    size: Size
    latency: Latency

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "size": self.size.to_dict(), "latency": self.latency.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Gain:
        return cls(str(data["variant"]), Size.from_dict(data["size"]), Latency.from_dict(mapping(data.get("latency"))))
