"""How a rule's slice and a task rule's interval read beside it, in every renderer."""

from __future__ import annotations

from checker.reports.model import RuleResult


def rule_scope(rule: RuleResult) -> str:
    """E.g. " (tags: edge; 10 items, 95 % 0.66 to 1, exact binomial ...)"; empty for a rule on every case
    without statistics."""
    parts = []
    if rule.tags:
        parts.append("tags: " + ", ".join(rule.tags[:8]))
    stats = rule.statistics
    if stats is not None:
        interval = stats.interval
        parts.append(f"{stats.items} items, 95 % {interval.low:.3g} to {interval.high:.3g}, {interval.method}")
    return f" ({'; '.join(parts)})" if parts else ""
