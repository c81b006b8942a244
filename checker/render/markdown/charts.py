"""The one Mermaid chart: each changed rule's figure at the base and at the head, over its threshold.

A chart is drawn only where it shows what its table cannot: two or more rules moved since the base, measured
against different thresholds, so that how near each came to its own line needs a division per row of the table
(against one threshold the table's figures compare as they stand, and a chart would restate them). Its
categories are short ("1 base", "1 head"), keyed to the rules listed above the chart, so that no two labels
overlap however long a rule's name is. Mermaid's
xychart draws every `bar` series at the same x and width, so a second series would hide the first; here
each rule has two categories side by side ("base" and "head"), and each category has a value in exactly one
series: the series say base or head, pass or fail, by their colour. The threshold (1) is a line across all of
them. A rule with a lower bound (cosine, SQNR, agreement) is left to the table: its figure over the threshold
sits near 1 whether it passes by far or by little, and would read as borderline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from checker.render.escape import text
from checker.render.markdown.detail import View
from checker.reports.parts.changes import RuleChange

# base passing, base failing, head passing, head failing, the threshold line
SERIES = ("base passes", "base fails", "head passes", "head fails")
PALETTE = "#8cc8a0, #f0a0a0, #1a7f37, #cf222e, #24292f"
MAX_RULES = 8


def change_chart(rules: list[RuleChange], view: View) -> Iterator[str]:
    pairs = [(r, p) for r in rules if (p := _point(r)) is not None][:MAX_RULES]
    points = [p for _, p in pairs]
    if len(points) < 2:  # one rule: its row in the table says it all
        return
    if len({t for r, _ in pairs for t in _thresholds(r)}) < 2:  # one threshold: the table's figures compare as is
        return
    if not view.detail.charts:
        view.cuts.add("charts")
        return
    labels: list[str] = []
    series: list[list[float]] = [[] for _ in SERIES]
    for n, (before, after, base_ok, head_ok) in enumerate(points, 1):
        for side, ratio, ok in (("base", before, base_ok), ("head", after, head_ok)):
            labels.append(f"{n} {side}")
            which = (0 if side == "base" else 2) + (0 if ok else 1)
            for i, values in enumerate(series):
                values.append(ratio if i == which else 0.0)
    top = max(1.25, max(max(p[0], p[1]) for p in points) * 1.1)
    config = {"themeVariables": {"xyChart": {"plotColorPalette": PALETTE}}}
    yield ""
    yield "<details><summary>Chart: each changed rule at the base and at the head, over its threshold</summary>"
    yield ""
    yield "; ".join(f"{n}: {text(_name(rule), 60)}" for n, (rule, _) in enumerate(pairs, 1))
    yield ""
    yield "```mermaid"
    yield f"%%{{init: {json.dumps(config)}}}%%"
    yield "xychart-beta"
    yield '  title "measured / threshold: over the line (1) fails; light: base, dark: head; red fails"'
    yield f"  x-axis [{', '.join(json.dumps(label) for label in labels)}]"
    yield f'  y-axis "measured / threshold" 0 --> {top:.3g}'
    for values in series:
        yield f"  bar [{', '.join(f'{v:.4g}' for v in values)}]"
    yield f"  line [{', '.join('1' for _ in labels)}]"
    yield "```"
    yield ""
    yield "</details>"


def _point(rule: RuleChange) -> tuple[float, float, bool, bool] | None:
    """A moved rule with an upper bound: its base and head figures each over its own side's threshold
    (an edited rule's base is drawn against the base's threshold), and whether each side passed."""
    if rule.direction == "min" or rule.moved is False:
        return None
    base_threshold = rule.base_threshold if rule.base_threshold is not None else rule.threshold
    before, after = _ratio(rule.base, base_threshold), _ratio(rule.head, rule.threshold)
    if before is None or after is None:
        return None
    return before, after, _passes(rule.base_passed, before), _passes(rule.head_passed, after)


def _name(rule: RuleChange) -> str:
    side = " vs baseline" if rule.against == "baseline" else ""
    return f"{rule.graph}{side} {rule.check}"


def _thresholds(rule: RuleChange) -> set[float]:
    return {t for t in (rule.threshold, rule.base_threshold) if t is not None}


def _passes(passed: bool | None, ratio: float) -> bool:
    """As the report judged the side (a pass rate below 1 may pass over the line), else by the line."""
    return passed if passed is not None else ratio <= 1


def _ratio(measured: float | None, threshold: float | None) -> float | None:
    """How far a figure with an upper bound went towards it: 1 is the threshold, above 1 fails."""
    if measured is None or threshold is None or threshold <= 0 or measured < 0:
        return None
    return measured / threshold
