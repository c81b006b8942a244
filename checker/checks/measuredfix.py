"""A failing variant's first fix, measured before it is shown.

A fix proposed unmeasured can be wrong: keeping the nodes the diagnosis names in float made the worst case worse
where the calibration, not a node, was at fault. So when a variant whose transform the checker can re-run
(onnxruntime.quantization's quantize_static or quantize_dynamic) fails, the comparison stage runs the same
measured search as `checker diagnose --requantize` (compare/requantize.py): the recorded transform re-run first,
then the settings onnxruntime offers and the candidate nodes (settings first: a short budget reaches them), each
judged by the variant's rules, within a budget of CPU time (`--fix-budget`; the recorded re-run always runs once).
What it found goes into the diagnosis finding's details (`measured`), where the remedy reads it; a search that
could not run or found nothing says why there, and the remedy says "not measured" with the command that measures
it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from checker.compare.requantize import Requantized, Request, Trial, requantize
from checker.compare.session import Runtime
from checker.context import Context
from checker.errors import BundleError
from checker.manifest.model.variants import Variant
from checker.reports.model import Comparison, RuleResult
from checker.sentences import bounded

QUANTIZERS = ("quantize_static", "quantize_dynamic")
REASON_CHARS = 500  # an error onnxruntime.quantization raised on a pull request's record, kept in the report


def unmeasured(ctx: Context, variant: Variant, judged: Sequence[Comparison]) -> dict[str, Any] | None:
    """Why the search cannot measure this variant's fix, as the `measured` details, or None when it can."""
    tool = variant.transform.tool or ""
    if tool.rsplit(".", 1)[-1] not in QUANTIZERS:
        said = f"the checker re-runs only onnxruntime.quantization's {' or '.join(QUANTIZERS)}, not '{tool or 'none'}'"
        return {"outcome": "not_run", "reason": said, "rerunnable": False}
    reason = _why_not(ctx, judged)
    return None if reason is None else {"outcome": "not_run", "reason": reason}


def _why_not(ctx: Context, judged: Sequence[Comparison]) -> str | None:
    """Why the search cannot run for a transform it could re-run (what the bundle says first, so that every shard
    of a set says what the whole run does)."""
    if any(r.answer is not None for c in judged for r in c.rules):
        return "the variant's rules on answers are judged by checker verify alone"
    if ctx.options.shard is not None:  # the recorded calibration may name cases another shard holds
        return "a shard holds only some of the cases: the whole set's run measures the fix"
    if ctx.options.fix_budget_s <= 0:
        return "the search for a measured fix was turned off: --fix-budget 0"
    return None


def measure(
    ctx: Context, variant: Variant, paths: tuple[Path, Path], candidates: list[str], runtime: Runtime
) -> dict[str, Any]:
    """The measured search for one failing variant (the baseline's and the variant's graph files), as the
    diagnosis finding's `measured` details."""
    budget = ctx.options.fix_budget_s
    request = Request(variant, paths[0], paths[1], candidates, None, budget, time.process_time, True)
    try:
        done = requantize(ctx, request, runtime)
    except BundleError as exc:
        return {"outcome": "not_run", "reason": bounded(str(exc), REASON_CHARS)}
    except Exception as exc:  # a record's settings the quantizer refuses in its own ways (a list for a mapping)
        said = f"the recorded transform could not be re-run: {exc}"
        return {"outcome": "not_run", "reason": bounded(said, REASON_CHARS)}
    return _said(done, budget)


def _said(done: Requantized, budget: float) -> dict[str, Any]:
    tool = done.tool.rsplit(".", 1)[-1]
    recorded = done.trials[1] if len(done.trials) > 1 else None
    if recorded is None or recorded.error:
        reason = recorded.error if recorded is not None else "it did not run"
        said = bounded(f"the recorded transform could not be re-run: {reason}", REASON_CHARS)
        return {"outcome": "not_run", "tool": tool, "reason": said}
    declared = "calibration_cases" in done.settings  # else every case, which the record does not say
    out: dict[str, Any] = {
        "tool": tool,
        "budget_s": budget,
        "calibration_cases": len(done.calibration),
        "calibration_declared": declared,
    }
    if recorded.rules and all(r.passed for r in recorded.rules):
        shipped = done.trials[0]  # the figures the re-run mends are the shipped graph's
        before = shipped if len(shipped.rules) == len(recorded.rules) else recorded
        return {**out, "outcome": "recorded", "rules": _figures(recorded, before)}
    found = next((t for t in done.trials[2:] if t.label == (done.found or {}).get("label")), None)
    if found is not None:
        return {
            **out,
            "outcome": "found",
            "change": found.label,
            "settings": found.settings,
            "nodes_to_exclude": found.nodes_to_exclude,
            "rules": _figures(found, recorded),
        }
    outcome = "budget" if done.stopped == "budget" else "none"
    return {
        **out,
        "outcome": outcome,
        "rules": _figures(recorded, recorded),
        "tried": [t.label for t in done.trials[2:]],
        "not_tried": done.not_tried,
    }


def _figures(trial: Trial, before: Trial) -> list[dict[str, Any]]:
    """Each rule `before` fails, or each rule when it fails none: its figure before and after."""
    pairs = list(zip(trial.rules, before.rules))
    shown = [(a, b) for a, b in pairs if not b.passed] or pairs
    return [_figure(a, b) for a, b in shown]


def _figure(after: RuleResult, before: RuleResult) -> dict[str, Any]:
    return {
        "output": after.output,
        "check": after.check,
        "before": before.measured,
        "after": after.measured,
        "limit": after.threshold,
        "direction": after.direction,
        "passed": after.passed,
    }
