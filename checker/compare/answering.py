"""Rules on answers (`answer:` instead of `output:`), judged for one graph against one side: each case's outputs are
decoded as the application decodes them and measured by the answer kind's figure against the other side's answer
(the reference's, decoded once from the expected outputs, or the baseline's); what changed is said in the
product's words ("int8 loses 'person' (0.26 → 0.24) in case 'street'")."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.answers.book import Book, Declared
from checker.answers.errors import AnswerError
from checker.answers.items import Item
from checker.answers.kind import CaseMeasure, Overall
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.answers import AnswerRule
from checker.manifest.model.rules import RuleBase
from checker.reports.model import RuleResult
from checker.reports.parts.answers import AnswerChange

if TYPE_CHECKING:
    import numpy as np

    from checker.context import Case, Context

Keys = tuple[str | int, ...]
MAX_CHANGES = 100  # changes a comparison keeps (the figures use all of them)
_NOT_PARAMS = ("answer", "check", "min_pass_rate", "tags")


@dataclass
class AnswerEntry:
    """One rule on an answer, where the manifest states it, and each case's measure."""

    keys: Keys
    rule: Any  # a rule block of checker/manifest/model/answers.py
    declared: Declared | None
    problem: str | None = None
    measures: dict[str, CaseMeasure | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    answers: dict[str, tuple[list[Item], list[Item]]] = field(default_factory=dict)  # kinds that keep items

    @property
    def name(self) -> str:
        return str(self.rule.answer)


def parse_answer_entries(
    ctx: Context, rules: Sequence[RuleBase | AnswerRule] | None, book: Book | None
) -> tuple[list[AnswerEntry], list[Finding]]:
    """The rules on answers among `rules` (the schema has judged their shape; the rules on graph outputs are
    compare.ruleset's); one naming an answer the manifest does not declare is a manifest.schema finding."""
    entries, found = [], []
    for rule in rules or []:
        if isinstance(rule, RuleBase):
            continue
        entry_keys = rule.at
        declared = book.answers.get(rule.answer) if book is not None else None
        entry = AnswerEntry(entry_keys, rule, declared)
        if declared is None:
            known = ", ".join(book.answers) if book is not None and book.answers else "none"
            entry.problem = f"no answer is named '{rule.answer}' (answers: {known})"
            found.append(
                F.error(F.MANIFEST_SCHEMA, f"{_label(entry_keys)}: {entry.problem}", **ctx.where(*entry_keys, "answer"))
            )
        elif declared.answer.kind != rule.check:
            kind = declared.answer.kind
            entry.problem = (
                f"answer '{rule.answer}' is of kind {kind}; check '{rule.check}' judges {rule.check} answers"
            )
            found.append(
                F.error(F.MANIFEST_SCHEMA, f"{_label(entry_keys)}: {entry.problem}", **ctx.where(*entry_keys, "check"))
            )
        elif book is not None and rule.answer in book.broken:
            entry.problem = f"answer '{rule.answer}' cannot be made (see the answers.invalid finding)"
        entries.append(entry)
    return entries, found


def _label(keys: Keys) -> str:
    return ".".join(str(k) for k in keys[:-1]) + f"[{keys[-1]}]"


Other = Callable[["Case", str], "list[Item] | None"]  # the other side's answer for a case, or None


@dataclass
class AnswerSet:
    """The rules on answers of one graph against one side; fed case by case as the graph runs."""

    graph: str
    against: str
    entries: list[AnswerEntry]
    book: Book | None
    other: Other
    case_tags: dict[str, list[str]] = field(default_factory=dict)

    def add_case(self, case: Case, actual: Mapping[str, np.ndarray] | None, failure: str | None) -> None:
        self.case_tags[case.name] = case.tags
        mine: dict[str, list[Item] | str] = {}
        for entry in self.entries:
            if entry.declared is None or entry.problem is not None or self.book is None:
                continue
            name = entry.name
            if actual is None:
                entry.measures[case.name], entry.notes[case.name] = None, f"the graph failed on this case: {failure}"
                continue
            if name not in mine:
                try:
                    mine[name] = self.book.decode(name, case, actual)
                except AnswerError as exc:
                    mine[name] = str(exc)
            decoded, other = mine[name], self.other(case, name)
            if isinstance(decoded, str):
                entry.measures[case.name], entry.notes[case.name] = None, decoded
                continue
            if other is None:
                side = (
                    "the baseline gave no answer"
                    if self.against == "baseline"
                    else "the reference answer cannot be made"
                )
                entry.measures[case.name], entry.notes[case.name] = None, side
                continue
            kind = entry.declared.kind
            measure = kind.measure(entry.rule, entry.declared.answer, decoded, other)
            entry.measures[case.name] = measure
            if measure.note:
                entry.notes[case.name] = measure.note
            if kind.keeps_items:
                entry.answers[case.name] = (decoded, other)

    def scope(self, entry: AnswerEntry, names: Sequence[str]) -> list[str]:
        tags = views.rule_tags(entry.rule)
        if not tags:
            return list(names)
        return [n for n in names if set(self.case_tags.get(n, ())) & set(tags)]


@dataclass
class Judged:
    results: list[RuleResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    changes: list[AnswerChange] = field(default_factory=list)


def judge_answers(ctx: Context, answers: AnswerSet, names: Sequence[str], explain: Any = None) -> Judged:
    out = Judged()
    for entry in answers.entries:
        line = ctx.manifest.line(*entry.keys)
        if entry.declared is None or entry.problem is not None:
            out.results.append(_unjudged(entry, line))
            continue
        scoped = answers.scope(entry, names)
        result, _ = judge_answer(entry, scoped, line)
        out.results.append(result)
        changes = [
            AnswerChange(entry.name, n, change)
            for n in scoped
            if (m := entry.measures.get(n)) is not None
            for change in m.changes
        ]
        for change in changes:
            if len(out.changes) < MAX_CHANGES and change not in out.changes:
                out.changes.append(change)
        if _vacuous(entry, scoped):
            out.findings.append(
                F.warning(
                    F.ANSWERS_VACUOUS,
                    f"{answers.graph}: rule {entry.name}/{entry.rule.check} had nothing to compare: the "
                    f"{'baseline' if answers.against == 'baseline' else 'reference'} answers are empty in every case "
                    f"of its slice ({len(scoped)} case(s)); it passes vacuously",
                    **ctx.where(*entry.keys),
                    graph=answers.graph,
                    answer=entry.name,
                )
            )
        if not result.passed:
            out.findings.append(
                answer_finding(answers.graph, answers.against, result, changes, **ctx.where(*entry.keys))
            )
    return out


def _vacuous(entry: AnswerEntry, names: Sequence[str]) -> bool:
    measures = [entry.measures.get(n) for n in names]
    return bool(measures) and all(m is not None and m.empty for m in measures)


def params_of(rule: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in rule.manifest_fields():
        if f.name in _NOT_PARAMS:
            continue
        value = getattr(rule, f.name)
        if value is None:
            continue
        out[f.name] = (
            {g.name: getattr(value, g.name) for g in value.manifest_fields()}
            if hasattr(value, "manifest_fields")
            else value
        )
    return out


def judge_answer(entry: AnswerEntry, names: Sequence[str], line: int | None) -> tuple[RuleResult, Overall | None]:
    assert entry.declared is not None
    kind, rule = entry.declared.kind, entry.rule
    threshold = kind.threshold(rule)
    measures = {n: entry.measures.get(n) for n in names}
    floor = getattr(rule, "min_pass_rate", None)  # a decision rule counts flips over the slice: it has none
    rate_floor = 1.0 if floor is None else float(floor)
    passing = sum(1 for m in measures.values() if m is not None and m.passed)
    rate = passing / len(names) if names else 0.0
    worst = max(names, key=lambda n: _badness(kind.direction, measures[n]), default=None)
    overall = kind.overall(
        rule, [(n, *entry.answers.get(n, ([], [])), m) for n, m in measures.items() if m is not None]
    )
    figures: dict[str, float | None] = {n: (m.figure if m is not None else None) for n, m in measures.items()}
    if overall is not None:
        unmeasured = [n for n, m in measures.items() if m is None]
        passed = overall.passed and not unmeasured and bool(names)
        measured: float | None = overall.figure
        worst = overall.worst_case if overall.worst_case is not None else worst
        note = overall.note
        if unmeasured:
            note = "; ".join(
                x for x in (note, f"case '{unmeasured[0]}': {entry.notes.get(unmeasured[0], 'not measured')}") if x
            )
    else:
        passed = bool(names) and rate >= rate_floor - 1e-12
        measured = figures.get(worst) if worst is not None else None
        note = _notes(entry, names)
    if _vacuous(entry, names):
        passed, note = bool(names), "nothing to compare: the other side's answers are empty in every case (vacuous)"
    result = RuleResult(
        output=entry.name,
        check=str(rule.check),
        params=params_of(rule),
        passed=passed,
        pass_rate=rate,
        min_pass_rate=rate_floor,
        worst_case=worst,
        measured=measured,
        threshold=threshold,
        would_pass_at=_would_pass_at(kind.direction, [f for f in figures.values()], rate_floor)
        if overall is None
        else measured,
        direction=kind.direction,
        cases=figures,
        note=note,
        line=line,
        case_notes={n: entry.notes[n] for n in names if n in entry.notes},
        tags=views.rule_tags(rule),
        answer=entry.name,
    )
    return result, overall


def _badness(direction: str, m: CaseMeasure | None) -> float:
    if m is None:
        return math.inf
    base = m.figure if direction == "max" else -m.figure
    return base + (0.0 if m.passed else 1e12)  # a failing case is worse than any passing one


def _would_pass_at(direction: str, figures: Sequence[float | None], rate: float) -> float | None:
    if not figures:
        return None
    needed = max(1, math.ceil(rate * len(figures) - 1e-9))
    ordered = sorted(math.inf if f is None else (f if direction == "max" else -f) for f in figures)
    decisive = ordered[needed - 1]
    if math.isinf(decisive):
        return None
    return decisive if direction == "max" else -decisive


def _notes(entry: AnswerEntry, names: Sequence[str]) -> str | None:
    failing = [f"case '{n}': {entry.notes[n]}" for n in names if n in entry.notes]
    if not failing:
        return None
    more = f"; and {len(failing) - 3} more" if len(failing) > 3 else ""
    return "; ".join(failing[:3]) + more


def _unjudged(entry: AnswerEntry, line: int | None) -> RuleResult:
    return RuleResult(
        output=entry.name, check=str(entry.rule.check), params={}, passed=False, pass_rate=0.0, min_pass_rate=1.0,
        worst_case=None, measured=None, threshold=None, would_pass_at=None, note=f"not judged: {entry.problem}",
        line=line, answer=entry.name,
    )  # fmt: skip


def changed_words(graph: str, changes: Sequence[AnswerChange], limit: int = 3) -> str:
    """E.g. "int8 loses 'person' (0.26 → 0.24) in case 'street'; ..."."""
    shown = [f"{graph} {c.change} in case '{c.case}'" for c in changes[:limit]]
    more = f"; and {len(changes) - limit} more change(s)" if len(changes) > limit else ""
    return "; ".join(shown) + more


def answer_finding(
    graph: str, against: str, result: RuleResult, changes: Sequence[AnswerChange], file: str | None, line: int | None
) -> Finding:
    from checker.compare.messages import rule_failure

    text = rule_failure(graph, against, result, result.case_notes)
    if changes:
        text = f"{changed_words(graph, changes)}: {text}"
    details = {"graph": graph, "against": against, "output": result.output, "answer": result.output,
               "check": result.check, "worst_case": result.worst_case}  # fmt: skip
    return F.error(F.COMPARISON_RULE, text, file, line, **details)


def reference_side(book: Book | None) -> Other:
    def other(case: Case, name: str) -> list[Item] | None:
        return None if book is None else book.reference.get(case.name, {}).get(name)

    return other


def baseline_side(book: Book | None, outputs: Mapping[str, Mapping[str, np.ndarray]]) -> Other:
    """The baseline's answer for a case, decoded from its kept outputs (once per case and answer)."""
    memo: dict[tuple[str, str], list[Item] | None] = {}

    def other(case: Case, name: str) -> list[Item] | None:
        key = (case.name, name)
        if key not in memo:
            found = outputs.get(case.name)
            try:
                memo[key] = None if book is None or found is None else book.decode(name, case, found)
            except AnswerError:
                memo[key] = None
        return memo[key]

    return other


def sources_of(entries: Sequence[AnswerEntry]) -> set[str]:
    """The graph outputs the answers these rules judge read."""
    from checker.answers.make import sources

    return {s for e in entries if e.declared is not None for s in sources(e.declared.answer)}


def iter_changes(judged: Judged) -> Iterator[AnswerChange]:
    return iter(judged.changes)
