"""The comparison tables: per graph, its rules with measured against threshold, the per-case figures of
the failing rules, and key-value details (a diagnosis).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.render.answered import change_lines, subject
from checker.render.escape import text
from checker.render.markdown.detail import Cuts, Detail
from checker.render.markdown.words import VERDICTS, number, status_mark
from checker.render.slices import rule_scope
from checker.reports.model import Comparison, RuleResult
from checker.reports.parts.judged import Diagnosis
from checker.reports.parts.runs import Validation


def comparison_section(comparison: Comparison, detail: Detail, cuts: Cuts) -> Iterator[str]:
    graph = text(comparison.graph or "?", 80)
    against = text(comparison.against or "?", 40)
    status = comparison.status
    yield ""
    yield f"#### {status_mark(status)} {graph} against the {against}: {VERDICTS[status]}"
    if comparison.skipped:
        yield ""
        yield text(comparison.skipped, detail.message_chars)
    if comparison.case_errors:
        yield ""
        yield text(_case_errors(comparison.case_errors), detail.message_chars)
    if comparison.changes:  # what changed in the product's words, before any figure (docs/answers.md)
        yield ""
        yield "Answers that changed:"
        yield ""
        changed = change_lines(comparison.graph, comparison.changes)
        yield from (f"- {text(line, detail.message_chars)}" for line in changed)
    rules = comparison.rules
    shown = rules if detail.passing_rules else [r for r in rules if not r.passed]
    cuts.add("passing rules", len(rules) - len(shown))
    if shown:  # no chart here: it would only restate this table's figures
        yield from _rule_table(shown)
    yield from _cases(rules, detail, cuts)
    if comparison.diagnosis is not None:
        yield from key_values("Diagnosis", diagnosis_rows(comparison.diagnosis))


def _case_errors(names: list[str]) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:5]) + (" ..." if len(names) > 5 else "")
    return f"Not a pass: {len(names)} case(s) have comparison.case errors ({shown})."


def _rule_table(rules: list[RuleResult]) -> Iterator[str]:
    # The figure at the pass rate asked differs from the worst case's only when a rule lets some cases fail;
    # a column that repeats "measured" row for row says nothing.
    at_rate = any(number(r.would_pass_at) != number(r.measured) for r in rules)
    heads = ["", "rule", "measured", "threshold", *(["measured at the pass rate asked"] if at_rate else [])]
    heads += ["worst case", "cases passing"]
    yield ""
    yield "| " + " | ".join(heads) + " |"
    yield "|" + "".join(" ---: |" if h.startswith(("measured", "threshold", "cases")) else " --- |" for h in heads)
    for r in rules:
        mark = "✅" if r.passed else "❌"
        figures = [r.measured, r.threshold, *([r.would_pass_at] if at_rate else [])]
        shown = " | ".join(number(f) for f in figures)
        yield f"| {mark} | {rule_name(r)} | {shown} | {worst_case(r)} | {_pass_rate(r)} |"


def worst_case(rule: RuleResult) -> str:
    """The worst case's name, or "all alike" when every case measured the same and no case failed by another bound
    (a score that moved too far, say: its note tells the cases apart)."""
    alike = len({repr(v) for v in rule.cases.values()}) == 1 and len({rule.case_notes.get(n) for n in rule.cases}) == 1
    if len(rule.cases) > 1 and alike:
        return "all alike"
    return text(rule.worst_case or "—", 80)


def rule_name(rule: RuleResult) -> str:
    args = ""
    if rule.params:
        args = " (" + ", ".join(f"{k}={_param(v)}" for k, v in list(rule.params.items())[:8]) + ")"
    return text(f"{subject(rule)} {rule.check}{args}{rule_scope(rule)}", 300)


def _param(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _pass_rate(rule: RuleResult) -> str:
    shown = f"{rule.pass_rate:.0%}"
    if rule.min_pass_rate < 1:
        shown += f" (needs {rule.min_pass_rate:.0%})"
    return shown


WORST_PASSING = 3  # passing cases shown beside the failing ones, worst first


def _case_fails(rule: RuleResult, name: str, value: float | None) -> bool:
    threshold = rule.threshold
    if value is None:
        return True  # not measured
    if rule.answer is not None and name in rule.case_notes:
        return True  # a rule on an answer notes a case only where a bound failed (a score that moved too far)
    if threshold is None:
        return False
    return value < threshold if rule.direction == "min" else value > threshold


def _badness(rule: RuleResult, value: float | None) -> float:
    if value is None:
        return float("inf")
    return -value if rule.direction == "min" else value


def _cases(rules: list[RuleResult], detail: Detail, cuts: Cuts) -> Iterator[str]:
    """Per failing rule: its failing cases, the worst few passing ones, and how many more pass."""
    rows: list[str] = []
    for r in rules:
        if r.passed:
            continue
        ordered = sorted(r.cases.items(), key=lambda item: _badness(r, item[1]), reverse=True)
        failing = [(n, v) for n, v in ordered if _case_fails(r, n, v)]
        passing = [(n, v) for n, v in ordered if not _case_fails(r, n, v)]
        name = rule_name(r)
        rows.extend(f"| {name} | {text(n, 80)} | {number(v)} | ❌ |" for n, v in failing)
        rows.extend(f"| {name} | {text(n, 80)} | {number(v)} | ✅ |" for n, v in passing[:WORST_PASSING])
        if len(passing) > WORST_PASSING:
            rows.append(f"| {name} | _{len(passing) - WORST_PASSING} more cases pass_ | | |")
    if not rows:
        return
    if not detail.cases:
        cuts.add("per-case figures", len(rows))
        return
    yield ""
    yield "<details><summary>Per-case figures of the failing rules: failing cases, then the worst passing</summary>"
    yield ""
    yield "| rule | case | measured | |"
    yield "| --- | --- | ---: | --- |"
    yield from rows
    yield ""
    yield "</details>"


def validation_rows(run: Validation) -> list[tuple[str, object]]:
    """The validation command's facts that are one value each (not its arguments), as the report orders them."""
    rows: list[tuple[str, object]] = [
        ("timeout_s", run.timeout_s), ("started", run.started), ("exit_code", run.exit_code),
        ("timed_out", run.timed_out),
    ]  # fmt: skip
    if run.start_error is not None:
        rows.append(("start_error", run.start_error))
    return [*rows, ("duration_s", run.duration_s), ("stdout_tail", run.stdout_tail), ("stderr_tail", run.stderr_tail)]


def diagnosis_rows(diagnosis: Diagnosis) -> list[tuple[str, object]]:
    """The diagnosis in a reviewer's words: what it found first, then where and how far it looked. The tensors'
    own records, and the report's field names, are left to the JSON report."""
    d = diagnosis
    rows: list[tuple[str, object]] = [("found", d.summary), ("variant and case", f"{d.variant}, case '{d.case}'")]
    looked = f"{d.compared} tensors matched to the baseline's"
    if d.unmatched:
        looked += f", {d.unmatched} without a match"
    rows.append(("tensors compared", looked))
    rows.append(("diverging below", f"{d.min_db:g} dB"))
    if d.nodes_to_exclude:
        rows.append(("nodes it names", ", ".join(d.nodes_to_exclude[:8])))
    return rows


def key_values(title: str, items: Sequence[tuple[str, object]]) -> Iterator[str]:
    """A part's facts (validation, diagnosis) as a table of fields and values, collapsed."""
    items = items[:20]
    if not items:
        return
    yield ""
    yield f"<details><summary>{title}</summary>"
    yield ""
    yield "| field | value |"
    yield "| --- | --- |"
    yield from (f"| {text(k, 60)} | {text(v, 300)} |" for k, v in items)
    yield ""
    yield "</details>"
