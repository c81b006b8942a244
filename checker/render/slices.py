"""How a rule's slice and a task rule's interval read beside it, in every renderer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def rule_scope(rule: Mapping[str, Any]) -> str:
    """E.g. " (tags: edge; 10 items, 95 % 0.66 to 1, exact binomial ...)"; empty for a rule on every case
    without statistics."""
    parts = []
    tags = rule.get("tags")
    if isinstance(tags, list) and tags:
        parts.append("tags: " + ", ".join(str(t) for t in tags[:8]))
    stats = rule.get("statistics")
    interval = stats.get("interval") if isinstance(stats, Mapping) else None
    if isinstance(stats, Mapping) and isinstance(interval, Mapping):
        low, high = interval.get("low"), interval.get("high")
        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
            parts.append(f"{stats.get('items')} items, 95 % {low:.3g} to {high:.3g}, {interval.get('method')}")
    return f" ({'; '.join(parts)})" if parts else ""
