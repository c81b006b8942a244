"""Advice that is measured before it is given: `checker diagnose --requantize`, and a failing variant's first fix
in `checker verify` (checks/comparison.py, within a CPU-time budget).

The variant's recorded transform (the onnxruntime.quantization function its `transform.tool` names, with its
`settings`) is run again on the baseline graph, calibrated on the bundle's cases (or the ones
`settings.calibration_cases` declares), once as recorded and once per candidate `nodes_to_exclude`. Each
result is judged by the variant's own rules; a set of nodes is recommended only when it improves every rule the
variant fails without making a passing rule fail. The report lists every attempt with its figures.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from checker.compare.fixsearch import Step, search, setting_changes
from checker.compare.quantizing import calibration_cases, calibration_reader, quant_kwargs, quantizer
from checker.compare.ruleset import RuleSet, entries, judge_set
from checker.compare.session import CaseRunError, Runtime, SessionError, open_session, run_case
from checker.context import Case, Context
from checker.errors import BundleError
from checker.manifest import views
from checker.manifest.model.variants import Variant
from checker.reports.model import RuleResult

MAX_SINGLE_TRIALS = 6  # besides the whole candidate set, each of the first few candidates alone


@dataclass
class Trial:
    """One graph judged by the variant's rules: the shipped variant, the recorded transform, or an exclusion."""

    label: str
    nodes_to_exclude: list[str]
    rules: list[RuleResult] = field(default_factory=list)
    error: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # the settings changed from the recorded ones
    seconds: float = 0.0  # what re-running and judging it took

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label,
            "nodes_to_exclude": self.nodes_to_exclude,
            **({"settings": self.settings} if self.settings else {}),
            "seconds": round(self.seconds, 3),
            "rules": [
                {"output": r.output, "check": r.check, "measured": r.measured, "passed": r.passed} for r in self.rules
            ],
        }
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class Recorded:
    """The recorded transform as it was run again: the tool, both versions, the settings used and ignored, and the
    calibration cases by name. Re-quantizing and reproducing both start from it."""

    tool: str
    recorded_version: str
    used_version: str
    settings: dict[str, Any]
    ignored: list[str]
    calibration: list[str]

    def recorded_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "recorded_version": self.recorded_version,
            "used_version": self.used_version,
            "settings": self.settings,
            "ignored_settings": self.ignored,
            "calibration_cases": self.calibration,
        }


@dataclass
class Requantized(Recorded):
    trials: list[Trial] = field(default_factory=list)
    recommended: list[str] = field(default_factory=list)
    summary: str = ""
    found: dict[str, Any] | None = None  # the passing change the search stopped at, with its figures and cost
    not_tried: list[str] = field(default_factory=list)
    stopped: str = "exhausted"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.recorded_dict(),
            "tried": [t.to_dict() for t in self.trials],
            "recommended": self.recommended,
            "found": self.found,
            "stopped": self.stopped,
            "not_tried": self.not_tried,
            "summary": self.summary,
        }


@dataclass
class _Judge:
    """Runs a graph on every case and judges it by the variant's rules and drift rules."""

    ctx: Context
    variant: Variant
    runtime: Runtime
    baseline: dict[str, dict[str, np.ndarray]]  # case -> outputs of the baseline graph

    def __call__(self, trial: Trial, path: Path) -> Trial:
        try:
            session = open_session(path, self.runtime)
        except SessionError as exc:
            trial.error = f"onnxruntime cannot load it: {exc}"
            return trial
        ref, drift = entries(views.output_rules(self.variant.rules)), entries(views.drift_rules(self.variant))
        base = self.baseline
        sets = [
            RuleSet(trial.label, "reference", ref, lambda c: c.expected, "no expected outputs", self.ctx.labels),
            RuleSet(trial.label, "baseline", drift, lambda c: base.get(c.name), "no baseline outputs", self.ctx.labels),
        ]
        for case in self.ctx.loaded_cases:
            try:
                outputs: dict[str, np.ndarray] | None = run_case(session, case.inputs)
                failure = None
            except CaseRunError as exc:
                outputs, failure = None, str(exc)
            for rules in sets:
                rules.add_case(case, outputs, failure)
        names = [c.name for c in self.ctx.loaded_cases]
        for rules in sets:
            trial.rules.extend(judge_set(self.ctx, rules, names)[0].rules)
        return trial


def baseline_outputs(ctx: Context, path: Path, runtime: Runtime) -> dict[str, dict[str, np.ndarray]]:
    try:
        session = open_session(path, runtime)
    except SessionError as exc:
        raise BundleError(f"onnxruntime cannot load the baseline graph: {exc}") from exc
    out = {}
    for case in ctx.loaded_cases:
        try:
            out[case.name] = run_case(session, case.inputs)
        except CaseRunError:
            continue
    return out


def _better(after: RuleResult, before: RuleResult) -> bool:
    if after.measured is None or before.measured is None:
        return after.passed and not before.passed
    if after.direction == "max":
        return after.measured < before.measured
    return after.measured > before.measured


def improves(trial: Trial, reference: Trial) -> bool:
    """Every rule the reference fails is better, and no rule it passes fails."""
    if trial.error or reference.error or len(trial.rules) != len(reference.rules):
        return False
    failing = [(a, b) for a, b in zip(trial.rules, reference.rules) if not b.passed]
    if not failing:
        return False
    regressed = any(b.passed and not a.passed for a, b in zip(trial.rules, reference.rules))
    return not regressed and all(_better(a, b) for a, b in failing)


def candidate_sets(candidates: Sequence[str]) -> list[list[str]]:
    sets = [list(candidates)] if candidates else []
    if len(candidates) > 1:
        sets += [[name] for name in candidates[:MAX_SINGLE_TRIALS]]
    return sets


def _choose(trials: Sequence[Trial], recorded: Trial) -> Trial | None:
    """The improving trial that passes the most rules, then gains most on the first failing rule."""
    better = [t for t in trials if improves(t, recorded)]
    if not better:
        return None
    first = next(i for i, r in enumerate(recorded.rules) if not r.passed)

    def score(t: Trial) -> tuple[int, float]:
        rule = t.rules[first]
        figure = rule.measured if rule.measured is not None else 0.0
        return sum(r.passed for r in t.rules), -figure if rule.direction == "max" else figure

    return max(better, key=score)


@dataclass
class Request:
    """What to re-run: the variant, the baseline graph, the shipped variant graph."""

    entry: Variant
    baseline: Path
    variant: Path
    candidates: list[str]
    cases: list[Case] | None = None  # the cases to time a found change on
    budget_s: float = 300.0  # the search stops here, saying what it did not try
    clock: Callable[[], float] = time.monotonic  # what the budget counts: wall time, or CPU time inside verify
    settings_first: bool = False  # the settings onnxruntime offers tried before the nodes (inside verify)


def requantize(ctx: Context, request: Request, runtime: Runtime) -> Requantized:
    import onnxruntime

    transform = request.entry.transform
    function = quantizer(transform.tool)
    settings = dict(transform.settings)
    kwargs, ignored = quant_kwargs(function, settings)
    calibration = calibration_cases(ctx.loaded_cases, settings.get("calibration_cases"))
    result = Requantized(
        transform.tool,
        transform.version,
        onnxruntime.__version__,
        settings,
        ignored,
        [c.name for c in calibration],
    )
    judge = _Judge(ctx, request.entry, runtime, baseline_outputs(ctx, request.baseline, runtime))
    # Each trial states the nodes it keeps in float: the record's, moved out of the settings it shares.
    recorded_excluded = list(kwargs.pop("nodes_to_exclude", None) or [])
    shipped = judge(Trial("the shipped variant", list(recorded_excluded)), request.variant)
    with tempfile.TemporaryDirectory(prefix="checker-requantize-") as work:

        def attempt(step: Step) -> Trial:
            label, extra, changed = step
            started = time.monotonic()
            excluded = list(dict.fromkeys(recorded_excluded + extra))
            out = Path(work) / f"trial-{len(result.trials)}-{int(started * 1e6)}.onnx"
            trial = Trial(label, excluded, settings=dict(changed))
            try:
                used = kwargs if not changed else quant_kwargs(function, {**settings, **changed})[0]
                used = {k: v for k, v in used.items() if k != "nodes_to_exclude"}
                reader = (
                    {"calibration_data_reader": calibration_reader(calibration)}
                    if "static" in function.__name__
                    else {}
                )
                function(str(request.baseline), str(out), **reader, **used, nodes_to_exclude=excluded)
            except Exception as exc:  # onnxruntime.quantization raises bare exceptions of many kinds
                trial.error = f"{function.__name__} failed: {exc}"
            else:
                judge(trial, out)
                if not (trial.rules and all(r.passed for r in trial.rules)):
                    out.unlink(missing_ok=True)  # one trial's graph on disk at a time, besides a passing one
                else:
                    kept[id(trial)] = out
            trial.seconds = time.monotonic() - started
            return trial

        kept: dict[int, Path] = {}
        recorded = attempt(("the recorded transform, re-run", [], {}))
        result.trials = [shipped, recorded]
        if not (recorded.error or all(r.passed for r in recorded.rules)):
            candidates = [n for n in request.candidates if n not in recorded_excluded]
            outcome = search(
                attempt,
                recorded,
                candidates,
                setting_changes(function.__name__, settings),
                request.budget_s,
                request.clock,
                request.settings_first,
            )
            result.trials += outcome.steps
            result.not_tried, result.stopped = outcome.not_tried, outcome.stopped
            if outcome.found is not None:
                result.found = _found(outcome.found, recorded, kept[id(outcome.found)], request, runtime)
    excluding = [t for t in result.trials[2:] if not t.settings]
    chosen = _choose(excluding, recorded)
    result.recommended = chosen.nodes_to_exclude if chosen is not None else []
    result.summary = _summary(result, recorded, chosen)
    return result


def _found(trial: Trial, recorded: Trial, path: Path, request: Request, runtime: Runtime) -> dict[str, Any]:
    """The passing change: every rule's figure before (the recorded transform) and after, and its cost."""
    from checker.compare.timing import paired

    sizes = {"baseline": request.baseline.stat().st_size, "shipped": request.variant.stat().st_size}
    sizes["found"] = path.stat().st_size
    out: dict[str, Any] = {
        "label": trial.label,
        "nodes_to_exclude": trial.nodes_to_exclude,
        "settings": trial.settings,
        "rules": [
            {"output": a.output, "check": a.check, "before": b.measured, "after": a.measured, "passed": a.passed}
            for a, b in zip(trial.rules, recorded.rules)
        ],
        "bytes": sizes,
        "smaller": sizes["baseline"] / sizes["found"] if sizes["found"] else 0.0,
    }
    try:
        sessions = [open_session(request.baseline, runtime), open_session(path, runtime)]
        cases = [c.inputs for c in (request.cases or [])][:8]
        if cases:
            timing = paired(_runner(sessions[0], cases), _runner(sessions[1], cases), len(cases), 0.5)
            out["faster"] = {"median": timing.faster, "low": timing.low, "high": timing.high, "rounds": timing.rounds}
    except (SessionError, CaseRunError) as exc:
        out["faster"] = {"skipped": str(exc)}
    return out


def _runner(session: Any, cases: list[dict[str, np.ndarray]]) -> Callable[[int], None]:
    from checker.compare.session import timed_run

    names = [i.name for i in session.get_inputs()]

    def run(i: int) -> None:
        timed_run(session, None, {n: cases[i][n] for n in names})

    return run


def _figures(trial: Trial, reference: Trial) -> str:
    pairs = [
        f"{b.output}/{b.check} {_num(b.measured)} -> {_num(a.measured)}"
        for a, b in zip(trial.rules, reference.rules)
        if not b.passed
    ]
    return "; ".join(pairs) or "-"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _summary(result: Requantized, recorded: Trial, chosen: Trial | None) -> str:
    version = (
        f" (recorded with {result.recorded_version}; re-run with {result.used_version})"
        if result.recorded_version != result.used_version
        else ""
    )
    head = f"re-ran {result.tool.rsplit('.', 1)[-1]}{version} on {len(result.calibration)} calibration case(s)"
    if recorded.error:
        return f"{head}: the recorded transform could not be re-run: {recorded.error}"
    if all(r.passed for r in recorded.rules):
        return f"{head}: the re-run passes every rule, so there is nothing to exclude"
    tried = [t for t in result.trials[2:]]
    if not tried:
        return f"{head}: the diagnosis found no node the transform changed to exclude, so nothing was tried"
    attempts = "; ".join(f"{t.label}: {t.error or _figures(t, recorded)}" for t in tried)
    if chosen is None:
        said = f"{head}; tried {attempts}; none improves the failing rules, so no nodes_to_exclude is recommended"
    else:
        said = f"{head}; tried {attempts}; recommended nodes_to_exclude={chosen.nodes_to_exclude!r}"
    return said + _outcome(result)


def _outcome(result: Requantized) -> str:
    """How the search ended: the passing change, or the budget, and what it did not try."""
    if result.found is not None:
        return f"; the search stopped at the first change that passes every rule: {result.found['label']}"
    if result.stopped == "budget":
        return f"; the search ran out of time before it tried: {', '.join(result.not_tried)}"
    return "; no change the search tried passes every rule"
