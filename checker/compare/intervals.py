"""Confidence intervals for task rules: a rate (Wilson) and a paired drop (exact binomial on discordant pairs).

Pure Python and NumPy: the exact binomial tails are summed in log space from one table of log-factorials, so
a set of a hundred thousand items costs milliseconds and no statistics library is needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
_Z = 1.959963984540054  # the two-sided 95 % quantile of the normal distribution
_STEPS = 60  # bisection steps: far below the float resolution of a probability


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str  # how it was computed, as the report names it

    def holds(self, value: float) -> bool:
        """Whether `value` lies inside: the cases cannot tell it from the measured figure."""
        return self.low - 1e-12 <= value <= self.high + 1e-12


def wilson(hits: int, n: int) -> Interval:
    """Wilson's score interval for a rate of `hits` in `n` (95 %); it stays inside [0, 1] at 0 and n."""
    if n == 0:
        return Interval(0.0, 1.0, "wilson")
    p, z2 = hits / n, _Z * _Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Interval(max(0.0, centre - half), min(1.0, centre + half), "wilson")


def log_binomials(n: int) -> tuple[np.ndarray, np.ndarray]:
    """log C(n, i) for i = 0..n, and the indices."""
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))))
    i = np.arange(n + 1)
    return log_fact[n] - log_fact[i] - log_fact[n - i], i


def binomial_cdf(log_c: np.ndarray, i: np.ndarray, n: int, p: float, upto: int) -> float:
    """P(X <= upto) for X ~ Binomial(n, p)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if upto >= n else 0.0
    logs = log_c[: upto + 1] + i[: upto + 1] * math.log(p) + (n - i[: upto + 1]) * math.log1p(-p)
    top = float(logs.max())
    return min(1.0, math.exp(top) * float(np.exp(logs - top).sum()))


def _solve(f: Callable[[float], float], target: float) -> float:
    """The p in [0, 1] where the decreasing function f(p) crosses target."""
    low, high = 0.0, 1.0
    for _ in range(_STEPS):
        mid = (low + high) / 2
        if f(mid) > target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def clopper_pearson(hits: int, n: int, alpha: float = 1 - CONFIDENCE) -> Interval:
    """The exact (Clopper-Pearson) interval for a rate: at most alpha/2 of probability outside each side."""
    if n == 0:
        return Interval(0.0, 1.0, "clopper-pearson")
    log_c, i = log_binomials(n)
    high = 1.0 if hits == n else _solve(lambda p: binomial_cdf(log_c, i, n, p, hits), alpha / 2)
    low = 0.0 if hits == 0 else _solve(lambda p: binomial_cdf(log_c, i, n, p, hits - 1), 1 - alpha / 2)
    return Interval(low, high, "clopper-pearson")


def paired_drop(lost: int, gained: int, n: int) -> Interval:
    """An interval for the drop (lost - gained) / n of paired items (95 % overall).

    drop = d * (2q - 1), where d is the share of discordant items (the two sides disagree on whether the item
    is right) and q the share of those the graph lost. Each gets an exact interval at 97.5 % (Clopper-Pearson
    for d, the exact binomial interval of McNemar's test for q); the drop's interval is the range of d*(2q-1)
    over both (Bonferroni). With no discordant item q is unknown, and the drop is bounded by d alone.
    """
    m = lost + gained
    d = clopper_pearson(m, n, (1 - CONFIDENCE) / 2)
    q = clopper_pearson(lost, m, (1 - CONFIDENCE) / 2) if m else Interval(0.0, 1.0, "")
    corners = [dd * (2 * qq - 1) for dd in (d.low, d.high) for qq in (q.low, q.high)]
    return Interval(min(corners), max(corners), "exact binomial on discordant pairs (McNemar), with Clopper-Pearson")


def mcnemar_p(lost: int, gained: int) -> float:
    """The exact two-sided McNemar p-value: how likely so uneven a split of the discordant items is by chance."""
    m = lost + gained
    if m == 0:
        return 1.0
    log_c, i = log_binomials(m)
    return min(1.0, 2 * binomial_cdf(log_c, i, m, 0.5, min(lost, gained)))
