"""The bundles that must run, spread over at most N matrix legs of about equal cost.

Each bundle costs what its last verification took (`duration_s` of an earlier report, or of its stored verdict);
one never measured costs the median of those that were (one second when none was). A bundle that alone costs more
than a leg's share is split into shards (`--shard K/N`, at most one per case, each still costing a minute by
its measured cost: a leg's own start costs about that), each a leg of its own; the others
are dealt out longest first, each to the leg that costs least so far. The legs are written as a GitHub Actions
matrix (`{"include": [...]}`) for `fromJSON`.
"""

from __future__ import annotations

import math
import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from checker.plan.select import RUN, Planned

DEFAULT_COST_S = 1.0
# A shard costs a leg's start (a runner, a checkout, the install: a minute on GitHub's runners) besides its
# cases: a bundle is split only into shards that each cost at least this, by its measured cost.
MIN_SHARD_S = 60.0


@dataclass
class Leg:
    """One job of the matrix: whole bundles, or one shard of one bundle."""

    bundles: list[str] = field(default_factory=list)
    cost: float = 0.0
    shard: str | None = None  # "K/N" for a shard of its one bundle

    def entry(self, number: int) -> dict[str, Any]:
        return {
            "leg": number,
            "bundles": shlex.join(self.bundles),  # as the action's bundles input splits it
            "args": f"--shard {self.shard}" if self.shard else "",
            "count": len(self.bundles),
            "cost": round(self.cost, 1),
        }


def costs_of(planned: Sequence[Planned]) -> dict[str, float]:
    """Each bundle to run and its cost, unmeasured ones at the median of the measured."""
    run = [p for p in planned if p.state == RUN]
    known = [p.cost for p in run if p.cost is not None and p.cost > 0]
    default = statistics.median(known) if known else DEFAULT_COST_S
    return {p.path: p.cost if p.cost is not None and p.cost > 0 else default for p in run}


def balance(planned: Sequence[Planned], legs: int) -> list[Leg]:
    run = [p for p in planned if p.state == RUN]
    if not run:
        return []
    cost = costs_of(run)
    share = sum(cost.values()) / legs
    measured = {p.path for p in run if p.cost is not None and p.cost > 0}
    split = _splits([p for p in run if p.path in measured], cost, share, legs, len(run))
    out = [
        Leg([p.path], cost[p.path] / split[p.path], f"{k}/{split[p.path]}")
        for p in run
        if p.path in split
        for k in range(1, split[p.path] + 1)
    ]
    rest = sorted((p for p in run if p.path not in split), key=lambda p: -cost[p.path])
    if rest:
        dealt = [Leg() for _ in range(min(len(rest), max(1, legs - len(out))))]
        for p in rest:
            lightest = min(dealt, key=lambda leg: leg.cost)
            lightest.bundles.append(p.path)
            lightest.cost += cost[p.path]
        order = {p.path: i for i, p in enumerate(run)}
        for leg in dealt:
            leg.bundles.sort(key=order.__getitem__)
        out += dealt
    return out


def _splits(
    measured: Sequence[Planned], cost: dict[str, float], share: float, legs: int, running: int
) -> dict[str, int]:
    """How many shards each measured bundle that costs more than a leg's share is split into; the shards and a
    leg for the rest fit in `legs`."""
    split = {
        p.path: min(math.ceil(cost[p.path] / share), int(cost[p.path] // MIN_SHARD_S), p.cases, legs)
        for p in measured
        if cost[p.path] > share * 1.5 and p.cases > 1
    }
    split = {path: k for path, k in split.items() if k > 1}
    room = legs - (1 if len(split) < running else 0)
    while split and sum(split.values()) > room:
        largest = max(split, key=lambda path: (split[path], cost[path]))
        split[largest] -= 1
        if split[largest] < 2:
            del split[largest]
    return split


def matrix(legs: Sequence[Leg]) -> dict[str, Any]:
    """The GitHub Actions matrix: one entry per leg, for `strategy.matrix: ${{ fromJSON(...) }}`."""
    return {"include": [leg.entry(number) for number, leg in enumerate(legs, start=1)]}
