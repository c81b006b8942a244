"""The Mermaid bar charts: each rule's measured figure as a share of its threshold, and each changed
rule's move since the base.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from checker.render.escape import mermaid
from checker.render.markdown.detail import Cuts, Detail, View
from checker.render.markdown.words import is_number


def change_chart(rules: list[Mapping[str, Any]], view: View) -> Iterator[str]:
    points = []
    for r in rules[:12]:
        before = _ratio({**r, "measured": r.get("base")})
        after = _ratio({**r, "measured": r.get("head")})
        if before is not None or after is not None:
            side = " vs baseline" if r.get("against") == "baseline" else ""
            label = mermaid(f"{r.get('graph')}{side} {r.get('output')} {r.get('check')}", 48)
            points.append((label, min(before or 0.0, CHART_CAP), min(after or 0.0, CHART_CAP)))
    if not points:
        return
    if not view.detail.charts:
        view.cuts.add("charts")
        return
    top = max(1.25, max(max(b, a) for _, b, a in points) * 1.1)
    yield ""
    yield "<details><summary>Chart: base against head, each rule's measured figure over its threshold</summary>"
    yield ""
    yield "```mermaid"
    yield "xychart-beta"
    yield '  title "base (first bar) and head (second bar) - measured / threshold"'
    yield f"  x-axis [{', '.join(chr(34) + label + chr(34) for label, _, _ in points)}]"
    yield f'  y-axis "measured / threshold (over 1 fails)" 0 --> {top:.3g}'
    yield f"  bar [{', '.join(f'{b:.4g}' for _, b, _ in points)}]"
    yield f"  bar [{', '.join(f'{a:.4g}' for _, _, a in points)}]"
    yield f"  line [{', '.join('1' for _ in points)}]"
    yield "```"
    yield ""
    yield "</details>"


def chart(comparison: Mapping[str, Any], rules: list[Mapping[str, Any]], detail: Detail, cuts: Cuts) -> Iterator[str]:
    ratios = [(r, _ratio(r)) for r in rules]
    points = [(mermaid(f"{r.get('output')} {r.get('check')}"), v) for r, v in ratios if v is not None]
    if not points:
        return
    if not detail.charts:
        cuts.add("charts")
        return
    top = max(1.25, min(max(v for _, v in points), CHART_CAP) * 1.1)
    labels = ", ".join(f'"{label}"' for label, _ in points)
    bars = ", ".join(f"{min(v, CHART_CAP):.4g}" for _, v in points)
    title = mermaid(f"{comparison.get('graph')} vs {comparison.get('against')} - measured / threshold", 60)
    yield ""
    yield "<details><summary>Chart: each rule's measured figure over its threshold (over 1 fails)</summary>"
    yield ""
    yield "```mermaid"
    yield "xychart-beta"
    yield f'  title "{title}"'
    yield f"  x-axis [{labels}]"
    yield f'  y-axis "measured / threshold (over 1 fails, capped at 2)" 0 --> {top:.3g}'
    yield f"  bar [{bars}]"
    yield f"  line [{', '.join('1' for _ in points)}]"
    yield "```"
    yield ""
    yield "</details>"


CHART_CAP = 2.0  # bars stop here; the table beside the chart has the figures


def _ratio(rule: Mapping[str, Any]) -> float | None:
    """How far the measured figure went towards the threshold: 1 is the threshold, above 1 fails."""
    measured, threshold = rule.get("measured"), rule.get("threshold")
    if not (is_number(measured) and is_number(threshold)):
        return None
    m, t = float(measured), float(threshold)
    if rule.get("direction") == "min":  # larger is better (cosine, sqnr, agreement)
        if t > 0:
            return t / m if m > 0 else CHART_CAP  # nothing agreed, or a negative cosine: as bad as it gets
        return None if m >= t else CHART_CAP
    if t > 0:
        return m / t if m >= 0 else None
    return 0.0 if m <= t else CHART_CAP  # a zero threshold (exact): any difference fails outright
