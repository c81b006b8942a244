"""The terminal report: a verdict per bundle, the pieces, the findings, and a table of rules per graph."""

from __future__ import annotations

from typing import Any

from checker.render.escape import printable
from checker.report import not_run_line

COLOURS = {"pass": "32", "fail": "31", "error": "31", "warning": "33", "info": "36", "not_assessed": "33"}


class Painter:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, key: str) -> str:
        code = COLOURS.get(key)
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour and code else text


# Keys whose text keeps its line breaks: `_validation` makes each line printable and prefixes it.
_MULTILINE = ("stdout_tail", "stderr_tail")
_MAX_DEPTH = 32


def _inert(value: Any, depth: int = 0) -> Any:
    """The report with every string made printable (dict keys too: rules key their figures by case name).
    A report read back from JSON may nest without end; nothing shown lies deeper than a few levels."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, (dict, list)) and depth > _MAX_DEPTH:
        return "…"
    if isinstance(value, dict):
        return {printable(str(k)): v if k in _MULTILINE else _inert(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_inert(v, depth + 1) for v in value]
    return value


def render(report: dict[str, Any], colour: bool = False, **_: Any) -> str:
    report = _inert(report)
    paint = Painter(colour)
    blocks = [_bundle(b, paint) for b in report.get("bundles", [])]
    total = len(report.get("bundles", []))
    failed = sum(1 for b in report.get("bundles", []) if b.get("status") == "fail")
    verdict = paint(report.get("status", "fail").upper(), report.get("status", "fail"))
    noun = "bundle passes" if total - failed == 1 else "bundles pass"
    skipped = not_run_line([n for b in report.get("bundles", []) for n in b.get("not_run") or []])
    suffix = f" — {skipped}" if skipped else ""
    blocks.append(f"{verdict}: {total - failed} of {total} {noun}{suffix} (checker {report.get('checker_version')})")
    return "\n\n".join(blocks) + "\n"


def _bundle(bundle: dict[str, Any], paint: Painter) -> str:
    status = bundle.get("status", "fail")
    title = f"{bundle.get('name') or '?'} {bundle.get('version') or ''}".strip()
    skipped = not_run_line(bundle.get("not_run") or [])
    suffix = f" — {skipped}" if skipped else ""
    lines = [f"{paint(status.upper(), status)}{suffix}  {title}  ({bundle.get('path')})"]
    if bundle.get("digest"):
        lines.append(f"  digest  {bundle['digest']}")
    pieces = bundle.get("pieces", {})
    lines.append("  pieces  " + "  ".join(f"{'✓' if v == 'present' else '✗'} {k}" for k, v in pieces.items()))
    lines += _findings(bundle.get("findings", []), paint)
    for comparison in bundle.get("comparisons", []):
        lines += _comparison(comparison, paint)
    if bundle.get("validation"):
        lines += _validation(bundle["validation"], paint)
    return "\n".join(lines)


def _validation(run: dict[str, Any], paint: Painter) -> list[str]:
    ok = run.get("exit_code") == 0 and not run.get("timed_out")
    how = "timed out" if run.get("timed_out") else f"exit {run.get('exit_code')}"
    verdict = "pass" if ok else "fail"
    head = f"  validation: {paint(verdict, verdict)} ({how}, {_fmt(run.get('duration_s'))} s)"
    lines = [head, "    $ " + " ".join(str(a) for a in run.get("command", []))]
    tail = str(run.get("stderr_tail") or run.get("stdout_tail") or "").strip().splitlines()[-5:]
    return lines + ["    | " + printable(line) for line in tail]


def _findings(findings: list[dict[str, Any]], paint: Painter) -> list[str]:
    order = {"error": 0, "warning": 1, "info": 2}
    out = []
    for f in sorted(findings, key=lambda f: order.get(f.get("severity", "info"), 3)):
        where = f"{f['file']}:{f['line']}" if f.get("file") and f.get("line") else f.get("file") or ""
        sev = paint(f"{f.get('severity', ''):7}", f.get("severity", ""))
        out.append(f"  {sev} {f.get('id', ''):24} {where + '  ' if where else ''}{f.get('message', '')}")
    return out


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _figures(rule: dict[str, Any]) -> tuple[str, str, str]:
    """measured, threshold and would-pass-at, with enough digits that a failing figure never reads as equal."""
    measured, threshold, would = rule.get("measured"), rule.get("threshold"), rule.get("would_pass_at")
    for digits in range(4, 10):
        shown = (_fmt(measured, digits), _fmt(threshold, digits), _fmt(would, digits))
        if rule.get("passed") or shown[0] != shown[1]:
            break
    return shown


def _params(rule: dict[str, Any]) -> str:
    params = rule.get("params") or {}
    return " ".join(f"{k}={_fmt(v)}" for k, v in params.items() if k not in ("output", "check")) or "-"


def _comparison(comparison: dict[str, Any], paint: Painter) -> list[str]:
    status = comparison.get("status", "")
    head = f"  {comparison.get('graph')} vs {comparison.get('against')}: {paint(status, status)}"
    if comparison.get("skipped"):
        return [head + f" ({comparison['skipped']})"]
    rows = [("", "output", "check", "parameters", "measured", "threshold", "would pass at", "pass rate", "worst case")]
    for r in comparison.get("rules", []):
        mark = "✓" if r.get("passed") else "✗"
        figures = _figures(r)
        rows.append(
            (
                mark,
                str(r.get("output")),
                str(r.get("check")),
                _params(r),
                *figures,
                _fmt(r.get("pass_rate")),
                str(r.get("worst_case") or "-"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    table = ["    " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return [head, *table]
