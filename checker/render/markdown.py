"""The Markdown report: the pull-request comment and the job summary, from the JSON-shaped report dict.

It renders whatever the report holds and trusts none of it: every name, label and message goes
through `escape.text`. It fits a size limit by leaving out the least important detail first (charts,
per-case figures, info findings, passing rules, then warnings and errors beyond the first few) and
says what it left out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

from checker.render.escape import forget, mermaid, text

COMMENT_LIMIT = 65_536  # characters in an issue comment's body
SUMMARY_LIMIT = 1_048_576  # bytes in one step's job summary; over it GitHub drops the whole summary
HEADER_RESERVE = 512  # room the sticky comment keeps for its hidden marker lines
DEFAULT_LIMIT = COMMENT_LIMIT - HEADER_RESERVE
TITLE = "ONNX release check"

SEVERITIES = (
    ("error", "❌", "error", "errors"),
    ("warning", "⚠️", "warning", "warnings"),
    ("info", "\N{INFORMATION SOURCE}\ufe0f", "note", "notes"),
)
VERDICTS = {"pass": "passed", "fail": "failed", "not_assessed": "not assessed"}
MARK = {"pass": "✅", "fail": "❌", "not_assessed": "⏭️"}
ENVIRONMENT_ORDER = ("checker", "onnxruntime", "onnx", "numpy", "python", "platform")


@dataclass(frozen=True)
class Detail:
    """How much to show. Each step of LEVELS gives up something less important than the next."""

    charts: bool = True
    cases: bool = True
    info: bool = True
    passing_rules: bool = True
    warnings: int | None = None  # at most this many listed per bundle; None lists all
    errors: int | None = None
    message_chars: int = 600
    full_bundles: int | None = None  # bundles shown in full; the rest get their verdict line only


_FULL = Detail()
# First whole kinds of detail go, least important first; then as many findings and bundles as fit.
LEVELS = (
    _FULL,
    replace(_FULL, charts=False),
    replace(_FULL, charts=False, cases=False),
    replace(_FULL, charts=False, cases=False, info=False),
    replace(_FULL, charts=False, cases=False, info=False, passing_rules=False),
)
_LEAN = LEVELS[-1]
CAPS: tuple[tuple[str, Callable[[int], Detail]], ...] = (
    ("warnings", lambda n: replace(_LEAN, warnings=n, message_chars=300)),
    ("errors", lambda n: replace(_LEAN, warnings=0, errors=n, message_chars=200)),
    ("bundles", lambda n: replace(_LEAN, warnings=0, errors=5, message_chars=120, full_bundles=n)),
)


@dataclass
class Cuts:
    """What one rendering left out, to say so at its end."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, n: int = 1) -> None:
        if n > 0:
            self.counts[what] = self.counts.get(what, 0) + n

    def note(self, limit_name: str) -> str | None:
        if not self.counts:
            return None
        parts = ", ".join(f"{n} {what}" for what, n in self.counts.items())
        return f"> [!NOTE]\n> Shortened to fit {limit_name}: left out {parts}. The JSON report has them all."


def render(
    report: Mapping[str, Any],
    *,
    limit: int = DEFAULT_LIMIT,
    notes: Sequence[str] = (),
    limit_name: str = "GitHub's comment size limit",
    colour: bool = False,
) -> str:
    """The report as Markdown of at most `limit` UTF-8 bytes (so also at most `limit` characters).

    `notes` are trusted Markdown lines from the caller, added at the end. `colour` is accepted like
    every renderer's and ignored: Markdown has none.
    """
    try:
        return _fitted(report, notes, limit_name, limit)
    finally:
        forget()


def _fitted(report: Mapping[str, Any], notes: Sequence[str], limit_name: str, limit: int) -> str:
    """The most detailed rendering that fits: whole kinds of detail go first, then a cap is bisected."""
    attempt = functools.partial(_attempt, report, notes=notes, limit_name=limit_name, limit=limit)
    body = ""
    for detail in LEVELS:
        body, fits = attempt(detail)
        if fits:
            return body
    for what, make in CAPS:
        most = _most(report, what)
        body, fits = attempt(make(0))
        if not fits:
            continue
        return _largest_fitting(attempt, make, most, body)
    return _hard_cut(body, limit)


def _attempt(
    report: Mapping[str, Any], detail: Detail, *, notes: Sequence[str], limit_name: str, limit: int
) -> tuple[str, bool]:
    body = _document(report, detail, Cuts(), notes, limit_name)
    return body, _size(body) <= limit


def _largest_fitting(
    attempt: Callable[[Detail], tuple[str, bool]], make: Callable[[int], Detail], most: int, fitting: str
) -> str:
    """Bisect for the largest cap that still fits; `fitting` is the body at cap 0, known to fit."""
    low, high, best = 0, most, fitting
    while low < high:
        middle = (low + high + 1) // 2
        body, fits = attempt(make(middle))
        if fits:
            low, best = middle, body
        else:
            high = middle - 1
    return best


def _most(report: Mapping[str, Any], what: str) -> int:
    """The largest useful cap: the most findings of that kind in one bundle, or the number of bundles."""
    bundles = _dicts(report.get("bundles"))
    if what == "bundles":
        return len(bundles)
    severity = what.removesuffix("s")
    return max((_severity_count(b, severity) for b in bundles), default=0)


def _size(s: str) -> int:
    return len(s.encode("utf-8"))


def _hard_cut(body: str, limit: int) -> str:
    """Last resort for reports too large even as verdict lines: whole lines up to the limit."""
    tail = "\n\n> [!NOTE]\n> Cut short to fit the size limit: the rest of the report is in the JSON report.\n"
    kept: list[str] = []
    used = _size(tail)
    for line in body.splitlines():
        used += _size(line) + 1
        if used > limit:
            break
        kept.append(line)
    return "\n".join(kept) + tail


def _document(report: Mapping[str, Any], detail: Detail, cuts: Cuts, notes: Sequence[str], limit_name: str) -> str:
    bundles = _dicts(report.get("bundles"))
    parts = [_headline(report, bundles), _overview(bundles)]
    for i, bundle in enumerate(bundles):
        if detail.full_bundles is not None and i >= detail.full_bundles:
            cuts.add("bundle details")
            continue
        parts.append("\n".join(_bundle(bundle, detail, cuts)))
    parts.append("\n".join(_environment(report.get("environment"))))
    parts.extend(notes)
    note = cuts.note(limit_name)
    if note:
        parts.append(note)
    parts.append(_footer(report))
    return "\n\n".join(p for p in parts if p) + "\n"


# ----- the top: one verdict for the run, then one line per bundle


def _headline(report: Mapping[str, Any], bundles: list[Mapping[str, Any]]) -> str:
    failed = sum(1 for b in bundles if b.get("status") == "fail")
    if not bundles:
        return f"## ⚠️ {TITLE}: no bundle was verified"
    if failed:
        return f"## ❌ {TITLE}: {failed} of {len(bundles)} {_plural(len(bundles), 'bundle')} failed"
    strict = " (warnings count as failures)" if report.get("strict") is True else ""
    return f"## ✅ {TITLE}: {_count(len(bundles), 'bundle')} passed{strict}"


def _overview(bundles: list[Mapping[str, Any]]) -> str:
    if not bundles:
        return ""
    rows = ["| | bundle | version | errors | warnings | pieces |", "| --- | --- | --- | ---: | ---: | ---: |"]
    names = [b.get("name") for b in bundles]
    for b in bundles:
        pieces = _pieces(b)
        present = sum(1 for v in pieces.values() if v == "present")
        rows.append(
            f"| {_mark(b.get('status'))} | {_bundle_name(b, names.count(b.get('name')) > 1)} "
            f"| {text(b.get('version') or '—', 80)} "
            f"| {_severity_count(b, 'error')} | {_severity_count(b, 'warning')} | {present}/{len(pieces)} |"
        )
    return "\n".join(rows)


def _bundle_name(bundle: Mapping[str, Any], with_path: bool = False) -> str:
    """The bundle's name; with its path too where two bundles share the name."""
    name = text(bundle.get("name") or bundle.get("path") or "(unnamed bundle)", 120)
    return f"{name} ({text(bundle['path'], 200)})" if with_path and bundle.get("path") else name


def _severity_count(bundle: Mapping[str, Any], severity: str) -> int:
    return sum(1 for f in _dicts(bundle.get("findings")) if f.get("severity") == severity)


# ----- one bundle


def _bundle(bundle: Mapping[str, Any], detail: Detail, cuts: Cuts) -> Iterator[str]:
    status = bundle.get("status")
    verdict = "passed" if status == "pass" else "failed"
    version = f" {text(bundle['version'], 80)}" if bundle.get("version") else ""
    yield f"### {_mark(status)} {_bundle_name(bundle)}{version} {verdict}"
    yield ""
    yield _identity(bundle)
    yield from _checklist(_pieces(bundle))
    yield from _findings(bundle, detail, cuts)
    for comparison in _dicts(bundle.get("comparisons")):
        yield from _comparison(comparison, detail, cuts)
    yield from _key_values("Validation command", bundle.get("validation"))


def _identity(bundle: Mapping[str, Any]) -> str:
    facts = [f"**Path:** {text(bundle.get('path') or '—', 200)}"]
    if bundle.get("manifest"):
        facts.append(f"**Manifest:** {text(bundle['manifest'], 120)}")
    if bundle.get("digest"):
        facts.append(f"**Digest:** {text(bundle['digest'], 80)}")
    return " · ".join(facts)


def _pieces(bundle: Mapping[str, Any]) -> dict[str, str]:
    pieces = bundle.get("pieces")
    return {str(k): str(v) for k, v in pieces.items()} if isinstance(pieces, Mapping) else {}


def _checklist(pieces: dict[str, str]) -> Iterator[str]:
    if not pieces:
        return
    present = sum(1 for v in pieces.values() if v == "present")
    yield ""
    yield f"**The seven pieces** ({present} of {len(pieces)} present)"
    yield ""
    for name, state in pieces.items():
        box = "x" if state == "present" else " "
        missing = "" if state == "present" else f": **{text(state, 40)}**"
        yield f"- [{box}] {text(name.replace('_', ' '), 60)}{missing}"


def _findings(bundle: Mapping[str, Any], detail: Detail, cuts: Cuts) -> Iterator[str]:
    findings = _dicts(bundle.get("findings"))
    manifest = bundle.get("manifest")
    for severity, icon, one, many in SEVERITIES:
        group = [f for f in findings if f.get("severity") == severity]
        if not group:
            continue
        shown = _shown(group, severity, detail)
        cuts.add(many, len(group) - len(shown))
        yield ""
        state = " open" if severity == "error" else ""
        yield f"<details{state}><summary>{icon} {_count(len(group), one, many)}</summary>"
        yield ""
        if shown:
            yield "| id | where | message |"
            yield "| --- | --- | --- |"
            for f in shown:
                message = text(f.get("message"), detail.message_chars)
                yield f"| {text(f.get('id'), 60)} | {_where(f, manifest)} | {message} |"
        if len(shown) < len(group):
            yield ""
            yield f"_{len(group) - len(shown)} more {many} are in the JSON report._"
        yield ""
        yield "</details>"


def _shown(group: list[Mapping[str, Any]], severity: str, detail: Detail) -> list[Mapping[str, Any]]:
    if severity == "info" and not detail.info:
        return []
    cap = {"error": detail.errors, "warning": detail.warnings}.get(severity)
    return group if cap is None else group[:cap]


def _where(finding: Mapping[str, Any], manifest: object) -> str:
    file = finding.get("file") or manifest
    if not file:
        return "—"
    line = finding.get("line")
    return text(f"{file}:{line}" if isinstance(line, int) and not isinstance(line, bool) else file, 160)


# ----- comparisons: per graph, its rules with measured against threshold


def _comparison(comparison: Mapping[str, Any], detail: Detail, cuts: Cuts) -> Iterator[str]:
    graph = text(comparison.get("graph") or "?", 80)
    against = text(comparison.get("against") or "?", 40)
    status = comparison.get("status")
    label = VERDICTS.get(str(status), text(status, 20))
    yield ""
    yield f"#### {_mark(status)} {graph} against the {against}: {label}"
    if comparison.get("skipped"):
        yield ""
        yield text(comparison["skipped"], detail.message_chars)
    rules = _dicts(comparison.get("rules"))
    shown = rules if detail.passing_rules else [r for r in rules if r.get("passed") is not True]
    cuts.add("passing rules", len(rules) - len(shown))
    if shown:
        yield from _rule_table(shown)
    yield from _chart(comparison, rules, detail, cuts)
    yield from _cases(rules, detail, cuts)
    yield from _key_values("Diagnosis", comparison.get("diagnosis"))


def _rule_table(rules: list[Mapping[str, Any]]) -> Iterator[str]:
    yield ""
    yield "| | rule | measured | threshold | would pass at | worst case | cases passing |"
    yield "| --- | --- | ---: | ---: | ---: | --- | ---: |"
    for r in rules:
        mark = "✅" if r.get("passed") is True else "❌"
        figures = " | ".join(_number(r.get(k)) for k in ("measured", "threshold", "would_pass_at"))
        worst = text(r.get("worst_case") or "—", 80)
        yield f"| {mark} | {_rule_name(r)} | {figures} | {worst} | {_pass_rate(r)} |"


def _rule_name(rule: Mapping[str, Any]) -> str:
    params = rule.get("params")
    args = ""
    if isinstance(params, Mapping) and params:
        args = " (" + ", ".join(f"{k}={_param(v)}" for k, v in list(params.items())[:8]) + ")"
    return text(f"{rule.get('output', '?')} {rule.get('check', '?')}{args}", 200)


def _param(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _pass_rate(rule: Mapping[str, Any]) -> str:
    rate, needed = rule.get("pass_rate"), rule.get("min_pass_rate")
    if not _is_number(rate):
        return "—"
    shown = f"{float(rate):.0%}"
    if _is_number(needed) and float(needed) < 1:
        shown += f" (needs {float(needed):.0%})"
    return shown


def _chart(comparison: Mapping[str, Any], rules: list[Mapping[str, Any]], detail: Detail, cuts: Cuts) -> Iterator[str]:
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
    if not (_is_number(measured) and _is_number(threshold)):
        return None
    m, t = float(measured), float(threshold)
    if rule.get("direction") == "min":  # larger is better (cosine, sqnr, agreement)
        if t > 0:
            return t / m if m > 0 else CHART_CAP  # nothing agreed, or a negative cosine: as bad as it gets
        return None if m >= t else CHART_CAP
    if t > 0:
        return m / t if m >= 0 else None
    return 0.0 if m <= t else CHART_CAP  # a zero threshold (exact): any difference fails outright


def _cases(rules: list[Mapping[str, Any]], detail: Detail, cuts: Cuts) -> Iterator[str]:
    rows: list[tuple[str, str, str]] = []
    for r in rules:
        cases = r.get("cases")
        if r.get("passed") is not True and isinstance(cases, Mapping):
            rows.extend((_rule_name(r), text(name, 80), _number(v)) for name, v in cases.items())
    if not rows:
        return
    if not detail.cases:
        cuts.add("per-case figures", len(rows))
        return
    yield ""
    yield f"<details><summary>Per-case figures of the failing rules ({len(rows)})</summary>"
    yield ""
    yield "| rule | case | measured |"
    yield "| --- | --- | ---: |"
    yield from (f"| {rule} | {case} | {value} |" for rule, case, value in rows)
    yield ""
    yield "</details>"


# ----- the environment and the footer


def _environment(environment: object) -> Iterator[str]:
    if not isinstance(environment, Mapping) or not environment:
        return
    keys = [k for k in ENVIRONMENT_ORDER if k in environment]
    keys += sorted(str(k) for k in environment if k not in ENVIRONMENT_ORDER)
    yield "<details><summary>Environment</summary>"
    yield ""
    yield "| | |"
    yield "| --- | --- |"
    for key in keys[:30]:
        yield f"| {text(key, 60)} | {text(environment[key], 200)} |"
    yield ""
    yield "</details>"


def _key_values(title: str, value: object) -> Iterator[str]:
    """A free-form mapping of the report (validation, diagnosis): its scalar fields, collapsed."""
    if not isinstance(value, Mapping):
        return
    items = [(k, v) for k, v in value.items() if isinstance(v, (str, int, float, bool)) or v is None][:20]
    if not items:
        return
    yield ""
    yield f"<details><summary>{title}</summary>"
    yield ""
    yield "| | |"
    yield "| --- | --- |"
    yield from (f"| {text(k, 60)} | {text(v, 300)} |" for k, v in items)
    yield ""
    yield "</details>"


def _footer(report: Mapping[str, Any]) -> str:
    version = text(report.get("checker_version") or "?", 40)
    local = "`checker verify --format markdown` shows this report locally"
    return f"<sub>onnx-release-checker {version} · {local}.</sub>"


# ----- small helpers


def _dicts(value: object) -> list[Mapping[str, Any]]:
    """The mappings of a list from the report; anything else in it is ignored, not trusted."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not _is_number(value):
        return text(value, 40)
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"


def _mark(status: object) -> str:
    return MARK.get(str(status), "❔")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return one if n == 1 else (many or one + "s")


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {_plural(n, one, many)}"
