"""The terminal report: a verdict per bundle, the pieces, the findings, and a table of rules per graph."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from checker.remedies import remedy
from checker.render.gains import gain_sentences
from checker.render.links import repo_path
from checker.render.placement import native_sentences, placement_sentences, usability_sentences
from checker.render.runtimes import runtime_table
from checker.render.slices import rule_scope
from checker.reports.diff import changed_rules, rule_name
from checker.reports.model import reused_line
from checker.terminal import printable

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from checker.render import RenderOptions


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


def render(report: Mapping[str, Any], **options: Unpack[RenderOptions]) -> str:
    """Ordered as a reader acts: the verdict; each failing bundle (its path, each error with its fix, then
    warnings, then what changed since the base, the pieces and the comparisons); then the passing ones."""
    report = _inert(dict(report))
    paint = Painter(options.get("colour", False))
    bundles = [b for b in report.get("bundles", []) if isinstance(b, dict)]
    changes = _changes(report.get("changes"))
    total = len(bundles)
    failed = sum(1 for b in bundles if b.get("status") == "fail")
    verdict = paint(str(report.get("status", "fail")).upper(), str(report.get("status", "fail")))
    noun = "bundle passes" if total - failed == 1 else "bundles pass"
    head = f"{verdict}: {total - failed} of {total} {noun} (checker {report.get('checker_version')}){_not_run(bundles)}"
    head += _strict_reason(report, bundles)
    reused = [b for b in bundles if isinstance(b.get("reused"), dict) and b.get("status") != "fail"]
    if any(isinstance(b.get("reused"), dict) for b in bundles):
        stored = sum(1 for b in bundles if isinstance(b.get("reused"), dict))
        head += f"; {stored} reused from the verdict store, {total - stored} verified"
    judged = [b for b in bundles if not any(b is r for r in reused)]
    ordered = [b for b in judged if b.get("status") == "fail"] + [b for b in judged if b.get("status") != "fail"]
    several = len(changes) > 1  # then each loosening names its bundle's path (release names may repeat)
    loosened = [
        (f"{e.get('path')}: " if several else "") + item
        for e in changes.values()
        for item in _seq(e.get("loosened"))
        if isinstance(item, str)
    ]
    if loosened:  # what a reviewer asks first: was a check weakened to get green?
        head += "\n" + paint("loosened since the base: ", "fail") + "; ".join(loosened)
    blocks = [head, *(_bundle(b, paint, changes.get(str(b.get("path")))) for b in ordered)]
    if reused:  # the verdicts that stand as stored: a line each, after the bundles judged here
        blocks.append("\n".join(_reused_line(b, paint) for b in reused))
    blocks += [f"removed since the base: {e.get('path')}" for e in changes.values() if e.get("state") == "removed"]
    return "\n\n".join(blocks) + "\n"


def _strict_reason(report: Mapping[str, Any], bundles: list[dict[str, Any]]) -> str:
    """Why bundles with no error failed: --strict counts their warnings as failures."""
    if report.get("strict") is not True:
        return ""

    def count(bundle: dict[str, Any], severity: str) -> int:
        return sum(1 for f in _seq(bundle.get("findings")) if isinstance(f, dict) and f.get("severity") == severity)

    failing = [b for b in bundles if b.get("status") == "fail" and count(b, "error") == 0]
    warnings = sum(count(b, "warning") for b in failing)
    return (
        f"; failed because warnings count as failures ({warnings} warning{'s' if warnings != 1 else ''})"
        if warnings
        else ""
    )


def _not_run(bundles: list[dict[str, Any]]) -> str:
    items = [i for b in bundles for i in _seq(b.get("not_run")) if isinstance(i, dict)]
    if not items:
        return ""
    named = "; ".join(f"{i.get('check')}: {i.get('reason')}" if i.get("reason") else str(i.get("check")) for i in items)
    return f" — {len(items)} check{'s' if len(items) != 1 else ''} not run: {named}"


def _changes(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        return {}
    return {str(e.get("path")): e for e in _seq(value.get("bundles")) if isinstance(e, dict)}


def _bundle(bundle: dict[str, Any], paint: Painter, change: dict[str, Any] | None = None) -> str:
    status = bundle.get("status", "fail")
    title = f"{bundle.get('name') or '?'} {bundle.get('version') or ''}".strip()
    manifest = repo_path(bundle.get("path"), bundle.get("manifest")) if bundle.get("manifest") else None
    lines = [f"{paint(status.upper(), status)}  {title}  ({manifest or bundle.get('path')})"]
    findings = [f for f in bundle.get("findings", []) if isinstance(f, dict)]
    lines += _findings(bundle, [f for f in findings if f.get("severity") in ("error", "warning")], paint)
    if change is not None:
        lines += _since_base(change)
    if bundle.get("digest"):
        lines.append(f"  digest  {bundle['digest']}")
    pieces = bundle.get("pieces", {})
    lines.append("  pieces  " + "  ".join(f"{'✓' if v == 'present' else '✗'} {k}" for k, v in pieces.items()))
    lines += _findings(bundle, [f for f in findings if f.get("severity") not in ("error", "warning")], paint)
    for comparison in bundle.get("comparisons", []):
        lines += _comparison(comparison, paint)
    lines += [f"  gain  {line}" for line in gain_sentences(bundle)]
    lines += _runtimes(bundle)
    lines += [f"  platform  {line}" for line in native_sentences(bundle)]
    lines += [f"  placement  {line}" for line in placement_sentences(bundle)]
    lines += [f"  usability  {line}" for line in usability_sentences(bundle)]
    if bundle.get("validation"):
        lines += _validation(bundle["validation"], paint)
    return "\n".join(lines)


def _reused_line(bundle: dict[str, Any], paint: Painter) -> str:
    """A passing bundle whose verdict was reused: its verdict, name and manifest, and the stored verdict."""
    status = bundle.get("status", "pass")
    title = f"{bundle.get('name') or '?'} {bundle.get('version') or ''}".strip()
    manifest = repo_path(bundle.get("path"), bundle.get("manifest")) if bundle.get("manifest") else None
    return (
        f"{paint(status.upper(), status)}  {title}  ({manifest or bundle.get('path')})  {reused_line(bundle['reused'])}"
    )


def _since_base(change: dict[str, Any]) -> list[str]:
    """What changed since the base report; a report read back from a file may hold anything, so every
    part is taken only when it has the expected shape."""
    if change.get("state") == "new":
        return ["  since the base: new (the base has no such bundle)"]
    facts = []
    status = _map(change.get("status"))
    if status.get("base") != status.get("head"):
        facts.append(f"was {status.get('base')}, now {status.get('head')}")
    if _seq(change.get("pieces")):
        facts.append("changed pieces: " + ", ".join(str(p) for p in _seq(change.get("pieces"))))
    found = _map(change.get("findings"))
    new, resolved = len(_seq(found.get("new"))), len(_seq(found.get("resolved")))
    if new or resolved:
        facts.append(f"{new} new findings, {resolved} resolved")
    cases = _map(change.get("cases"))
    for key in ("added", "removed"):
        if _seq(cases.get(key)):
            facts.append(f"cases {key}: " + ", ".join(str(c) for c in _seq(cases.get(key))[:10]))
    lines = ["  since the base: " + ("; ".join(facts) if facts else "no change in pieces, figures or findings")]
    for rule in changed_rules(change):
        edits = [
            f"{e.get('param')} {_fmt(e.get('base'))} -> {_fmt(e.get('head'))} ({e.get('effect')})"
            for e in _seq(rule.get("edits"))
            if isinstance(e, dict)
        ]
        if edits or rule.get("rule") in ("added", "removed"):
            what = ", ".join(edits) if edits else f"{rule.get('rule')} ({rule.get('effect')})"
            lines.append(f"    {rule_name(rule)}: {what}")
        delta = rule.get("delta")
        shown = f" ({delta:+.4g})" if isinstance(delta, (int, float)) and not isinstance(delta, bool) else ""
        crossed = f", {rule['crossed']}" if rule.get("crossed") else ""
        side = " vs baseline" if rule.get("against") == "baseline" else ""
        lines.append(
            f"    {rule.get('graph')}{side} {rule.get('output')} {rule.get('check')}: "
            f"{_fmt(rule.get('base'))} -> {_fmt(rule.get('head'))}{shown} "
            f"(threshold {_fmt(rule.get('threshold'))}{crossed})"
        )
    return lines


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _seq(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _runtimes(bundle: dict[str, Any]) -> list[str]:
    table = runtime_table(bundle)
    if table is None:
        return []
    heads, rows = table
    widths = [max(len(row[i]) for row in [heads, *rows]) for i in range(len(heads))]
    lines = ["    " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [heads, *rows]]
    return ["  rules in each runtime:", *lines]


def _validation(run: dict[str, Any], paint: Painter) -> list[str]:
    ok = run.get("exit_code") == 0 and not run.get("timed_out")
    how = "timed out" if run.get("timed_out") else f"exit {run.get('exit_code')}"
    if run.get("started") is False:
        how = f"could not start: {printable(str(run.get('start_error') or 'no such program'))}"
    verdict = "pass" if ok else "fail"
    head = f"  validation: {paint(verdict, verdict)} ({how}, {_fmt(run.get('duration_s'))} s)"
    lines = [head, "    $ " + " ".join(str(a) for a in run.get("command", []))]
    tail = str(run.get("stderr_tail") or run.get("stdout_tail") or "").strip().splitlines()[-5:]
    return lines + ["    | " + printable(line) for line in tail]


def _findings(bundle: dict[str, Any], findings: list[dict[str, Any]], paint: Painter) -> list[str]:
    order = {"error": 0, "warning": 1, "info": 2}
    out = []
    for f in sorted(findings, key=lambda f: order.get(f.get("severity", "info"), 3)):
        file = f.get("file") or None
        shown = repo_path(bundle.get("path"), file) or file if file else None
        where = f"{shown}:{f['line']}" if shown and f.get("line") else shown or ""
        sev = paint(f"{f.get('severity', ''):7}", f.get("severity", ""))
        out.append(f"  {sev} {f.get('id', ''):24} {where + '  ' if where else ''}{f.get('message', '')}")
        if f.get("severity") in ("error", "warning"):
            out.append(f"          fix: {printable(remedy(f, str(bundle.get('path') or ''), findings))}")
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
    faulty = [str(n) for n in comparison.get("case_errors") or []]
    if faulty:
        shown = ", ".join(f"'{n}'" for n in faulty[:5]) + (" ..." if len(faulty) > 5 else "")
        head += f" ({len(faulty)} case(s) have comparison.case errors: {shown})"
    rows = [("", "output", "check", "parameters", "measured", "threshold", "at pass rate", "pass rate", "worst case")]
    for r in comparison.get("rules", []):
        mark = "✓" if r.get("passed") else "✗"
        figures = _figures(r)
        rows.append(
            (
                mark,
                str(r.get("output")),
                str(r.get("check")),
                _params(r) + rule_scope(r),
                *figures,
                _fmt(r.get("pass_rate")),
                str(r.get("worst_case") or "-"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    table = ["    " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return [head, *table]
