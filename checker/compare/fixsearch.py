"""The measured search of `checker diagnose --requantize`: the smallest change that makes the failing rules pass.

Every step re-runs the transform and judges the result by the variant's rules. The steps go from small to
large: each candidate node kept in float alone (which measures its contribution, and ranks the nodes), each
setting onnxruntime offers for a poor quantization changed alone (16-bit activations, reduce_range,
per-channel scales, another calibration method), then the best-ranked nodes kept in float together, one more
at a time. The search stops at the first change that passes every rule, or when its time budget ends; what it
did not reach is listed, so a search cut short says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from checker.reports.model import RuleResult

# A step: (label, nodes kept in float, settings changed) -> the judged trial.
Step = tuple[str, list[str], dict[str, Any]]
MAX_RANKED = 12  # candidate nodes measured alone; the rest are ranked after them, unmeasured


def passes(rules: Sequence[RuleResult]) -> bool:
    return bool(rules) and all(r.passed for r in rules)


def gain_on(rules: Sequence[RuleResult], reference: Sequence[RuleResult]) -> float:
    """How far the first rule the reference fails moved towards passing (larger is better)."""
    for after, before in zip(rules, reference):
        if not before.passed:
            if after.measured is None or before.measured is None:
                return 0.0
            moved = before.measured - after.measured
            return moved if before.direction == "max" else -moved
    return 0.0


def setting_changes(function_name: str, settings: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The settings onnxruntime offers against a poor quantization, each differing from what was recorded."""
    out: list[tuple[str, dict[str, Any]]] = []
    static = "static" in function_name
    qdq = str(settings.get("quant_format", "QDQ")).endswith("QDQ")
    if static and qdq and not str(settings.get("activation_type", "QUInt8")).endswith("16"):
        extra = {**dict(settings.get("extra_options") or {}), "UseQDQContribOps": True}
        out.append(("16-bit activations", {"activation_type": "QUInt16", "extra_options": extra}))
    if settings.get("reduce_range") is not True:
        out.append(("reduce_range", {"reduce_range": True}))
    if settings.get("per_channel") is not True:
        out.append(("per-channel weights", {"per_channel": True}))
    if static:
        recorded = str(settings.get("calibrate_method", "MinMax")).rsplit(".", 1)[-1]
        for method in ("Percentile", "Entropy"):
            if method != recorded:
                out.append((f"{method} calibration", {"calibrate_method": method}))
    return out


@dataclass
class Outcome:
    """What the search did: every step judged, the passing change it stopped at, and what it did not try."""

    steps: list[Any] = field(default_factory=list)  # the judged trials, in order
    found: Any = None
    not_tried: list[str] = field(default_factory=list)
    stopped: str = "exhausted"  # "passed" | "budget" | "exhausted"


def search(
    judge: Callable[[Step], Any],
    recorded: Any,
    candidates: Sequence[str],
    settings: list[tuple[str, dict[str, Any]]],
    budget_s: float,
    clock: Callable[[], float] = time.monotonic,
    settings_first: bool = False,
) -> Outcome:
    """Run the steps smallest first until one passes every rule or the budget ends; with `settings_first`, the
    settings before the nodes (a short budget reaches the few settings that mend a calibration spread over every
    node, where keeping one node in float changed nothing)."""
    deadline = clock() + budget_s
    outcome = Outcome()
    gains: dict[str, float] = {}
    ranked = list(candidates[:MAX_RANKED])
    singles: list[tuple[str, Step | None]] = [(f"keeping {n} in float", (f"excluding {n}", [n], {})) for n in ranked]
    changes: list[tuple[str, Step | None]] = [(label, (label, [], change)) for label, change in settings]
    queue = changes + singles if settings_first else singles + changes
    queue.append(("the best-ranked nodes kept in float together, one more at a time", None))
    while queue:
        name, step = queue.pop(0)
        if clock() > deadline:
            outcome.stopped = "budget"
            outcome.not_tried = [name] + [n for n, _ in queue]
            return outcome
        if step is None:  # the greedy tier, once the singles have ranked the nodes
            order = sorted((n for n in ranked if gains.get(n, 0.0) > 0), key=lambda n: -gains[n])
            queue = [
                (f"keeping {', '.join(order[:k])} in float", (f"excluding {', '.join(order[:k])}", order[:k], {}))
                for k in range(2, len(order) + 1)
            ] + queue
            continue
        trial = judge(step)
        outcome.steps.append(trial)
        if len(step[1]) == 1 and not step[2]:
            gains[step[1][0]] = gain_on(trial.rules, recorded.rules) if not trial.error else 0.0
        if not trial.error and passes(trial.rules):
            outcome.found = trial
            outcome.stopped = "passed"
            outcome.not_tried = [n for n, s in queue if s is not None]
            return outcome
    return outcome
