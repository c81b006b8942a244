"""Paired, interleaved timing of two graphs on the same cases, until the median ratio's interval is tight.

Each round runs one case through both graphs back to back, the order alternating from round to round, so a
slow moment (another process, a frequency step) falls on both sides alike; the round's figure is the ratio
of the two times. The median of the ratios gets a distribution-free interval from the order statistics
(the sign test's binomial quantiles), and the rounds stop when that interval is within `tolerance` of the
median on either side, or when the time budget ends.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from checker.compare.intervals import CONFIDENCE, binomial_cdf, log_binomials
from checker.reports.parts.gains import SPEED_INTERVAL, PairedTiming
from checker.reports.parts.judged import Interval

WARMUP = 3  # untimed runs of the first case per graph: first runs allocate and page in the weights
MIN_ROUNDS = 32
MAX_ROUNDS = 20_000
TOLERANCE = 0.03  # the interval's ends within 3 % of the median
# Two sessions of one graph differ by a few per cent here (benchmarks/bench_gain.py): a speed-up must clear it.
NOISE = 0.05

Run = Callable[[int], None]  # runs case i once


@dataclass(frozen=True)
class Timing:
    """How much faster the variant ran than the baseline (median time ratio) and the interval around it."""

    faster: float  # the median of baseline time / variant time over the rounds
    low: float
    high: float
    rounds: int
    baseline_s: float  # the median time of one case
    variant_s: float
    elapsed_s: float
    stopped: str  # "tight": the interval is within tolerance; "budget": time ran out; "rounds": the cap

    def record(self) -> PairedTiming:
        """What the report keeps of it (a gain's latency), its times in milliseconds."""
        interval = Interval(self.low, self.high, SPEED_INTERVAL, CONFIDENCE)
        ms = 1e3
        return PairedTiming(
            self.faster, interval, self.rounds, self.baseline_s * ms, self.variant_s * ms, self.elapsed_s, self.stopped
        )


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(low, median, high): the 95 % interval of the median from order statistics; the range under 6 values."""
    ordered = sorted(values)
    n = len(ordered)
    middle = ordered[(n - 1) // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    log_c, i = log_binomials(n)
    j = 0  # the largest j with P(X <= j - 1) <= 2.5 % for X ~ Binomial(n, 1/2): [x_(j), x_(n-j+1)]
    while j + 1 <= n // 2 and binomial_cdf(log_c, i, n, 0.5, j) <= 0.025:
        j += 1
    if j == 0:
        return ordered[0], middle, ordered[-1]
    return ordered[j - 1], middle, ordered[n - j]


def _median(values: list[float]) -> float:
    return median_interval(values)[1]


def paired(
    baseline: Run,
    variant: Run,
    cases: int,
    budget_s: float,
    tolerance: float = TOLERANCE,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Warm up, then time rounds of (baseline, variant) on case after case until the interval is tight."""
    start = clock()
    for i in [0] * (WARMUP - 1) + list(range(cases)):  # then every case once: its shapes' buffers are made
        baseline(i)
        variant(i)
    ratios: list[float] = []
    times: tuple[list[float], list[float]] = ([], [])
    stopped = "rounds"
    for r in range(MAX_ROUNDS):
        i = r % cases
        order = (baseline, variant) if r % 2 == 0 else (variant, baseline)
        spent = []
        for run in order:
            t0 = clock()
            run(i)
            spent.append(max(clock() - t0, 1e-9))
        base_t, var_t = spent if r % 2 == 0 else spent[::-1]
        times[0].append(base_t)
        times[1].append(var_t)
        ratios.append(base_t / var_t)
        if len(ratios) >= MIN_ROUNDS and len(ratios) % cases == 0:
            low, mid, high = median_interval(ratios)
            if low >= mid * (1 - tolerance) and high <= mid * (1 + tolerance):
                stopped = "tight"
                break
        if clock() - start > budget_s and len(ratios) >= 2:
            stopped = "budget"
            break
    low, mid, high = median_interval(ratios)
    return Timing(mid, low, high, len(ratios), _median(times[0]), _median(times[1]), clock() - start, stopped)


def tight(timing: Timing) -> bool:
    return timing.stopped == "tight" and math.isfinite(timing.faster)
