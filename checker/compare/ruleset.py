"""A list of rules from the manifest, judged for one graph against one set of expected outputs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checker import findings as F
from checker.compare import messages, task
from checker.compare.metrics import Pair
from checker.compare.rules import CaseResult, Keys, Rule, RuleError, evaluate_case, judge_rule, parse_rule
from checker.findings import Finding
from checker.reports.model import Comparison, RuleResult

if TYPE_CHECKING:
    import numpy as np

    from checker.context import Case, Context

Arrays = Mapping[str, "np.ndarray"]


@dataclass
class Entry:
    """One rule as the manifest states it: parsed, or the reason it cannot be judged."""

    keys: Keys
    raw: Any
    rule: Rule | None = None
    problem: str | None = None
    results: dict[str, CaseResult] = field(default_factory=dict)


@dataclass
class RuleSet:
    """The rules of one graph against one side: `expected(case)` gives that side's arrays (None: none)."""

    graph: str
    against: str  # "reference" or "baseline"
    entries: list[Entry]
    expected: Callable[[Case], Arrays | None]
    missing: str  # why a case has no expected arrays
    labels: Mapping[str, list[str]] = field(default_factory=dict)  # output name -> labels, for task rules
    index_outputs: frozenset[str] = frozenset()  # outputs of class indices (labels `values: index`)
    case_tags: dict[str, list[str]] = field(default_factory=dict)  # case name -> its tags, for scoped rules

    def add_case(self, case: Case, actual: Arrays | None, failure: str | None) -> None:
        expected = self.expected(case)
        cache: dict[str, Pair] = {}
        self.case_tags[case.name] = case.tags
        for entry in self.entries:
            rule = entry.rule
            if rule is None:
                continue
            if rule.check.task and actual is not None:
                entry.results[case.name] = task.case_result(
                    rule, case, actual, expected, self.labels.get(rule.output), rule.output in self.index_outputs
                )
            else:
                entry.results[case.name] = case_result(rule, actual, expected, failure, self.missing, cache)

    def scope(self, rule: Rule, names: Sequence[str]) -> list[str]:
        """The cases a rule judges: those carrying any of its tags, or every case when it names none."""
        if not rule.tags:
            return list(names)
        return [n for n in names if set(self.case_tags.get(n, ())) & set(rule.tags)]


def case_result(
    rule: Rule,
    actual: Arrays | None,
    expected: Arrays | None,
    failure: str | None,
    missing: str,
    cache: dict[str, Pair] | None = None,
) -> CaseResult:
    if actual is None:
        return CaseResult(None, False, f"the graph failed on this case: {failure}")
    if expected is None:
        return CaseResult(None, False, missing)
    return evaluate_case(rule, actual.get(rule.output), expected.get(rule.output), cache)


def parse_entries(ctx: Context, keys: Keys) -> tuple[list[Entry], list[Finding]]:
    """The rules at `keys` in the manifest; a malformed one is a manifest.schema finding, not a crash."""
    raw_rules = _at(ctx.data, keys)
    entries, found = [], []
    for i, raw in enumerate(raw_rules if isinstance(raw_rules, list) else []):
        if isinstance(raw, Mapping) and "answer" in raw:
            continue  # a rule on an answer: compare.answering judges it
        entry = Entry((*keys, i), raw)
        try:
            entry.rule = parse_rule(raw, entry.keys)
        except RuleError as exc:
            entry.problem = str(exc)
            found.append(F.error(F.MANIFEST_SCHEMA, f"{_label(keys, i)}: {exc}", **ctx.where(*entry.keys)))
        entries.append(entry)
    return entries, found


def check_outputs(ctx: Context, entries: Sequence[Entry], outputs: Sequence[str], graph: str) -> list[Finding]:
    """A rule on an output the graph does not have cannot be judged: a manifest.schema finding."""
    found = []
    for entry in entries:
        if entry.rule is not None and entry.rule.output not in outputs:
            entry.problem = f"{graph} has no output '{entry.rule.output}' (it has {', '.join(outputs) or 'none'})"
            entry.rule = None
            label = _label(entry.keys[:-1], int(entry.keys[-1]))
            found.append(F.error(F.MANIFEST_SCHEMA, f"{label}: {entry.problem}", **ctx.where(*entry.keys, "output")))
    return found


def _at(data: Mapping[str, Any], keys: Keys) -> Any:
    node: Any = data
    for key in keys:
        if isinstance(node, Mapping) and isinstance(key, str):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return None
    return node


def _label(keys: Keys, index: int) -> str:
    return ".".join(str(k) for k in keys) + f"[{index}]"


def _unjudged(entry: Entry, line: int | None) -> RuleResult:
    raw = entry.raw if isinstance(entry.raw, Mapping) else {}
    return RuleResult(
        output=str(raw.get("output", "?")),
        check=str(raw.get("check", "?")),
        params={},
        passed=False,
        pass_rate=0.0,
        min_pass_rate=1.0,
        worst_case=None,
        measured=None,
        threshold=None,
        would_pass_at=None,
        note=f"not judged: {entry.problem}",
        line=line,
    )


Explain = Callable[[Entry, RuleResult], "str | None"]  # a sentence to add to a failed rule


def judge_set(
    ctx: Context, rules: RuleSet, names: Sequence[str], explain: Explain | None = None
) -> tuple[Comparison, list[Finding]]:
    """The Comparison of one graph against one side, with a comparison.rule finding per failed rule.

    `explain` may add a sentence to a failed rule (which boundary introduced the error).
    """
    comparison = Comparison(rules.graph, rules.against)
    found: list[Finding] = []
    for entry in rules.entries:
        line = ctx.manifest.line(*entry.keys)
        if entry.rule is None:
            comparison.rules.append(_unjudged(entry, line))
            continue
        scoped = rules.scope(entry.rule, names)
        if entry.rule.check.task:
            result, interval = task.judge_task(entry.rule, scoped, entry.results, line)
            too_few = (
                None
                if interval is None
                else task.too_few_finding(rules.graph, result, interval, ctx.where(*entry.keys))
            )
            found.extend([too_few] if too_few is not None else [])
        else:
            result = judge_rule(entry.rule, scoped, entry.results, line)
            result.tags = list(entry.rule.tags)
        comparison.rules.append(result)
        if not result.passed:
            extra = explain(entry, result) if explain is not None else None
            found.append(rule_finding(rules.graph, rules.against, result, extra, **ctx.where(*entry.keys)))
            if extra:
                result.note = f"{result.note}; {extra}" if result.note else extra
    found.extend(nan_findings(ctx, rules, names))
    return comparison, found


def rule_finding(
    graph: str, against: str, result: RuleResult, extra: str | None, file: str | None, line: int | None
) -> Finding:
    """The comparison.rule finding of a failed rule (also rebuilt from a merged result by reports.merge)."""
    text = messages.rule_failure(graph, against, result, result.case_notes)
    if extra:
        text += f"; {extra}"
    details = {
        "graph": graph,
        "against": against,
        "output": result.output,
        "check": result.check,
        "worst_case": result.worst_case,
    }
    return F.error(F.COMPARISON_RULE, text, file, line, **details)


def nan_findings(ctx: Context, rules: RuleSet, names: Sequence[str]) -> Iterator[Finding]:
    """One comparison.nan finding per output whose actual values hold NaN/infinity the expected ones lack."""
    seen: set[str] = set()
    for entry in rules.entries:
        if entry.rule is None or entry.rule.output in seen:
            continue
        cases = [n for n in names if n in entry.results and entry.results[n].nonfinite]
        if cases:
            seen.add(entry.rule.output)
            shown = ", ".join(f"'{c}'" for c in cases[:5]) + (" ..." if len(cases) > 5 else "")
            msg = (
                f"{rules.graph}: output '{entry.rule.output}' holds NaN or infinity where the "
                f"{'baseline' if rules.against == 'baseline' else 'expected'} output is finite, in "
                f"{len(cases)} case(s): {shown}"
            )
            yield F.error(F.COMPARISON_NAN, msg, **ctx.where(*entry.keys), graph=rules.graph, cases=cases)


def diagnosed_case(judged: Sequence[Comparison]) -> str | None:
    """The case a failed variant is diagnosed on: its first failing rule's worst case (its rules against the
    reference first, then against the baseline; ties go to the earlier case). `checker verify` and
    `checker diagnose` both pick it, so one failure gets one diagnosis."""
    for comparison in judged:
        for rule in comparison.rules:
            if not rule.passed and rule.worst_case is not None:
                return rule.worst_case
    return None
