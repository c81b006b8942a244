"""What a comparison says of the application's answers (docs/answers.md), alike in every renderer: the answers
that changed under a graph, in the product's words, shown before any tensor figure, and a rule on an answer
named as one."""

from __future__ import annotations

from checker.reports.model import Comparison, RuleResult
from checker.reports.parts.answers import AnswerChange

# The changes a comparison shows; the report keeps up to 100 (compare.answering.MAX_CHANGES).
SHOWN_CHANGES = 5


def subject(rule: RuleResult) -> str:
    """What a rule judges: "answer 'objects'" for a rule on an answer, else the output's name."""
    return f"answer '{rule.answer}'" if rule.answer is not None else rule.output


def changes_of(comparison: Comparison, rule: RuleResult) -> list[AnswerChange]:
    """The changes of the answer a rule judges (none for a rule on a tensor)."""
    return [c for c in comparison.changes if c.answer == rule.answer] if rule.answer is not None else []


def change_lines(graph: str, changes: list[AnswerChange], limit: int = SHOWN_CHANGES) -> list[str]:
    """E.g. ["int8 loses 'person' (0.26 → 0.24) in case 'street' (answer 'objects')", "and 3 more change(s)"]."""
    several = len({c.answer for c in changes}) > 1
    lines = [
        f"{graph} {c.change} in case '{c.case}'" + (f" (answer '{c.answer}')" if several else "")
        for c in changes[:limit]
    ]
    if len(changes) > limit:
        lines.append(f"and {len(changes) - limit} more change(s)")
    return lines
