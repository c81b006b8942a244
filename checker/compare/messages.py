"""The sentences a failed rule produces: graph, output, check, the worst case, and how far it missed."""

from __future__ import annotations

from typing import Any

from checker.compare.metrics import CHECKS
from checker.reports.model import RuleResult


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def figure_text(result: RuleResult, value: float) -> str:
    params: dict[str, Any] = {"rtol": 0.0, "k": 1, "iou": 0.5, **result.params}
    if result.answer is not None:
        from checker.answers.kinds import KINDS  # only a rule on an answer reads the answer kinds

        return KINDS[result.check].wording.format(v=value, t=result.threshold or 0.0, **params)
    return CHECKS[result.check].wording.format(v=value, t=result.threshold or 0.0, **params)


def _worst(result: RuleResult, case_notes: dict[str, str]) -> str:
    name = result.worst_case
    if result.measured is None:
        return f"worst case '{name}' {case_notes.get(name or '', 'could not be measured')}"
    return f"worst case '{name}' {figure_text(result, result.measured)}"


def would_pass_text(result: RuleResult) -> str:
    """Empty: a failure message states the measured figure, never a threshold to move to (that figure stays
    in the report's `would_pass_at`), so the message does not invite loosening the rule."""
    return ""


def rule_failure(graph: str, against: str, result: RuleResult, case_notes: dict[str, str]) -> str:
    """E.g. "int8: rule logits/score_drift failed: worst case 'dim-dog' changed the top score by ..."."""
    if result.answer is not None:
        return answer_failure(graph, against, result)
    if CHECKS[result.check].task:
        return task_failure(graph, against, result)
    total = len(result.cases)
    failed = total - round(result.pass_rate * total)
    sides = {"reference": "", "baseline": " against the baseline's outputs"}
    where = sides.get(against, f" against {against}'s outputs")  # another provider's: CPUExecutionProvider's
    if failed == 0 and result.note:  # every case passed, yet the rule did not: its note says why
        return f"{graph}: rule {result.output}/{result.check} failed{where}: {result.note}"
    return (
        f"{graph}: rule {result.output}/{result.check} failed{where}: {_worst(result, case_notes)}; "
        f"{failed}/{total} cases failed (pass rate {_fmt(result.pass_rate)} < {result.min_pass_rate:g})"
        f"{would_pass_text(result)}"
    )


def task_failure(graph: str, against: str, result: RuleResult) -> str:
    """E.g. "int8: rule logits/accuracy_drop failed on the cases tagged edge: loses 1 of top-1 accuracy ..."."""
    scope = f" on the cases tagged {', '.join(result.tags)}" if result.tags else ""
    head = f"{graph}: rule {result.output}/{result.check} failed{scope}"
    stats = result.statistics
    if result.measured is None or stats is None:
        return f"{head}: {result.note or 'it could not be measured'}"
    side = "the baseline's outputs" if against == "baseline" else "the reference outputs"
    interval = stats.interval
    paired = f", paired with {side}" if stats.paired else ""
    return (
        f"{head}: {figure_text(result, result.measured)} over {stats.items} labelled item(s){paired} "
        f"(95 % interval [{_fmt(interval.low)}, {_fmt(interval.high)}], {interval.method})"
    )


def answer_failure(graph: str, against: str, result: RuleResult) -> str:
    """E.g. "int8: rule on answer people/detections failed: worst case 'street' has recall and precision 0.5 ..."."""
    sides = {"reference": "", "baseline": " against the baseline's answers"}
    where = sides.get(against, f" against {against}'s answers")
    scope = f" on the cases tagged {', '.join(result.tags)}" if result.tags else ""
    head = f"{graph}: rule on answer {result.output}/{result.check} failed{where}{scope}"
    if result.measured is None or result.worst_case is None:
        return f"{head}: {result.note or 'it could not be measured'}"
    total = len(result.cases)
    failed = total - round(result.pass_rate * total)
    detail = result.case_notes.get(result.worst_case)
    text = f"{head}: worst case '{result.worst_case}' {figure_text(result, result.measured)}"
    if detail:
        text += f" ({detail})"
    if result.note and result.note != detail and not result.case_notes:
        text += f"; {result.note}"
    return f"{text}; {failed}/{total} cases failed"
