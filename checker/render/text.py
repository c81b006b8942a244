"""The terminal report: a verdict per bundle, the pieces, the findings, and a table of rules per graph."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from checker.findings import Finding, Severity
from checker.manifest.pieces import piece_label
from checker.remedies import remedy
from checker.render.answered import change_lines, subject
from checker.render.gains import gain_sentences
from checker.render.links import repo_path
from checker.render.loosening import with_line
from checker.render.placement import native_sentences, placement_sentences, usability_sentences
from checker.render.roots import consequences, root_name
from checker.render.runtimes import runtime_table
from checker.render.slices import rule_scope
from checker.reports.model import BundleReport, Comparison, Report, RuleResult, writable
from checker.reports.parts.changes import BundleChange
from checker.reports.parts.runs import Validation
from checker.reports.parts.values import JsonValue, each_string
from checker.terminal import printable

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from checker.render import RenderOptions


COLOURS = {"pass": "32", "fail": "31", "error": "31", "warning": "33", "info": "36", "not_assessed": "33"}
_MARKS = {"present": "✓", "not checked": "?"}  # a piece no check reached is not shown as missing
SHOWN_FIRST = (Severity.ERROR, Severity.WARNING)  # before what changed and the pieces


class Painter:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, key: str) -> str:
        code = COLOURS.get(key)
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour and code else text


# Fields left as they are, each made printable where it is shown: the text that keeps its line breaks
# (`_validation` makes each line printable and prefixes it), and a reused verdict's figures, shown only as one
# line (`_reused_line`).
_KEPT = ("stdout_tail", "stderr_tail", "reused")
_MAX_DEPTH = 32


def _inert(report: Report) -> Report:
    """The report with every string made printable (dict keys too: rules key their figures by case name).
    A finding's details may nest without end; nothing shown lies deeper than a few levels."""
    return each_string(report, lambda s: printable(writable(s)), keep=_KEPT, deepest=_MAX_DEPTH)


def render(report: Report, **options: Unpack[RenderOptions]) -> str:
    """Ordered as a reader acts: the verdict; each failing bundle (its path, each error with its fix, then
    warnings, then what changed since the base, the pieces and the comparisons); then the passing ones."""
    # A reused pass is one line, made printable as a whole (`_reused_line`): the rest is walked to make every
    # string printable, which for a zoo's hundreds of reused bundles would be most of the rendering.
    statuses = [b.status(report.strict) for b in report.bundles]
    passes = [b.reused is not None and s != "fail" for b, s in zip(report.bundles, statuses)]
    judged = _inert(dataclasses.replace(report, bundles=[b for b, p in zip(report.bundles, passes) if not p]))
    shown = iter(judged.bundles)
    bundles = [b if p else next(shown) for b, p in zip(report.bundles, passes)]
    report = dataclasses.replace(judged, bundles=bundles)
    status = {id(b): s for b, s in zip(bundles, statuses)}  # making text printable changes no verdict
    standing = {id(b) for b, p in zip(bundles, passes) if p}
    paint = Painter(options.get("colour", False))
    changes = report.changes.by_path() if report.changes is not None else {}
    failing = [b for b in bundles if status[id(b)] == "fail"]
    total, failed = len(bundles), len(failing)
    verdict = paint(report.status.upper(), report.status)
    noun = "bundle passes" if total - failed == 1 else "bundles pass"
    head = f"{verdict}: {total - failed} of {total} {noun} (checker {report.checker_version}){_not_run(bundles)}"
    head += _strict_reason(report, failing)
    stored = sum(1 for b in bundles if b.reused is not None)
    if stored:
        head += f"; {stored} reused from the verdict store, {total - stored} verified"
    reused = [b for b in bundles if id(b) in standing]
    rest = [b for b in bundles if id(b) not in standing]
    ordered = [b for b in rest if status[id(b)] == "fail"] + [b for b in rest if status[id(b)] != "fail"]
    several = len(changes) > 1  # then each loosening names its bundle's path (release names may repeat)
    # Each path as the walked report holds it: a reused pass's made printable here.
    manifests = {_shown(b.path): _shown(b.manifest_file) for b in reused} | {b.path: b.manifest_file for b in rest}
    loosened = [
        (f"{e.path}: " if several else "") + with_line(item, e, manifests.get(e.path))
        for e in changes.values()
        for item in e.loosened
    ]
    if loosened:  # what a reviewer asks first: was a check weakened to get green?
        head += "\n" + paint("loosened since the base: ", "fail") + "; ".join(loosened)
    blocks = [head, *(_bundle(b, status[id(b)], paint, changes.get(b.path)) for b in ordered)]
    if reused:  # the verdicts that stand as stored: a line each, after the bundles judged here
        blocks.append("\n".join(_reused_line(b, status[id(b)], paint) for b in reused))
    blocks += [f"removed since the base: {e.path}" for e in changes.values() if e.state == "removed"]
    return "\n\n".join(blocks) + "\n"


def _strict_reason(report: Report, failing: list[BundleReport]) -> str:
    """Why bundles with no error failed: --strict counts their warnings as failures."""
    if not report.strict:
        return ""
    warnings = sum(b.count(Severity.WARNING) for b in failing if b.count(Severity.ERROR) == 0)
    return (
        f"; failed because warnings count as failures ({warnings} warning{'s' if warnings != 1 else ''})"
        if warnings
        else ""
    )


def _not_run(bundles: list[BundleReport]) -> str:
    items = [i for b in bundles for i in b.not_run]
    if not items:
        return ""
    named = "; ".join(f"{i.check}: {i.reason}" if i.reason else i.check for i in items)
    named = printable(writable(named))  # a reused bundle's, as its attestation words them, are not made so before
    return f" — {len(items)} check{'s' if len(items) != 1 else ''} not run: {named}"


def _bundle(bundle: BundleReport, status: str, paint: Painter, change: BundleChange | None = None) -> str:
    title = f"{bundle.name or '?'} {bundle.version or ''}".strip()
    manifest = repo_path(bundle.path, bundle.manifest_file) if bundle.manifest_file else None
    lines = [f"{paint(status.upper(), status)}  {title}  ({manifest or bundle.path})"]
    findings = bundle.findings
    lines += _findings(bundle, [f for f in findings if f.severity in SHOWN_FIRST], paint)
    if change is not None:
        lines += _since_base(change)
    if bundle.digest:
        lines.append(f"  digest  {bundle.digest}")
    pieces = bundle.piece_states()
    lines.append("  pieces  " + "  ".join(f"{_MARKS.get(v, '✗')} {k}" for k, v in pieces.items()))
    lines += _findings(bundle, [f for f in findings if f.severity not in SHOWN_FIRST], paint)
    for comparison in bundle.comparisons:
        lines += _comparison(comparison, paint)
    lines += [f"  gain  {line}" for line in gain_sentences(bundle)]
    lines += _runtimes(bundle)
    lines += [f"  platform  {line}" for line in native_sentences(bundle)]
    lines += [f"  placement  {line}" for line in placement_sentences(bundle)]
    lines += [f"  usability  {line}" for line in usability_sentences(bundle)]
    if bundle.validation is not None:
        lines += _validation(bundle.validation, paint)
    return "\n".join(lines)


def _shown(text: str | None) -> str | None:
    return printable(writable(text)) if text is not None else None


def _reused_line(bundle: BundleReport, status: str, paint: Painter) -> str:
    """A passing bundle whose verdict was reused: its verdict, name and manifest, and the stored verdict."""
    title = f"{bundle.name or '?'} {bundle.version or ''}".strip()
    manifest = repo_path(bundle.path, bundle.manifest_file) if bundle.manifest_file else None
    said = bundle.reused.line() if bundle.reused is not None else ""
    line = printable(writable(f"{title}  ({manifest or bundle.path})  {said}"))  # not walked by _inert
    return f"{paint(status.upper(), status)}  {line}"


def _since_base(change: BundleChange) -> list[str]:
    """What changed since the base report."""
    if change.state == "new":
        return ["  since the base: new (the base has no such bundle)"]
    facts = []
    if change.status.base != change.status.head:
        facts.append(f"was {change.status.base}, now {change.status.head}")
    compared = change.compared
    if compared is not None:
        if compared.pieces:
            facts.append("changed pieces: " + ", ".join(piece_label(p) for p in compared.pieces))
        new, resolved = len(compared.findings.new), len(compared.findings.resolved)
        if new or resolved:
            facts.append(f"{new} new findings, {resolved} resolved")
        for key, names in (("added", compared.cases.added), ("removed", compared.cases.removed)):
            if names:
                facts.append(f"cases {key}: " + ", ".join(names[:10]))
    lines = ["  since the base: " + ("; ".join(facts) if facts else "no change in pieces, figures or findings")]
    for rule in change.changed_rules:
        edits = [f"{e.param} {_fmt(e.base)} -> {_fmt(e.head)} ({e.effect})" for e in rule.edits]
        if edits or rule.rule in ("added", "removed"):
            what = ", ".join(edits) if edits else f"{rule.rule} ({rule.effect})"
            lines.append(f"    {rule.name}: {what}")
        shown = f" ({rule.delta:+.4g})" if rule.delta is not None else ""
        crossed = f", {rule.crossed}" if rule.crossed else ""
        side = " vs baseline" if rule.against == "baseline" else ""
        lines.append(
            f"    {rule.graph}{side} {rule.output} {rule.check}: "
            f"{_fmt(rule.base)} -> {_fmt(rule.head)}{shown} "
            f"(threshold {_fmt(rule.threshold)}{crossed})"
        )
    return lines


def _runtimes(bundle: BundleReport) -> list[str]:
    table = runtime_table(bundle)
    if table is None:
        return []
    heads, rows = table
    widths = [max(len(row[i]) for row in [heads, *rows]) for i in range(len(heads))]
    lines = ["    " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [heads, *rows]]
    return ["  rules in each runtime:", *lines]


def _validation(run: Validation, paint: Painter) -> list[str]:
    ok = run.exit_code == 0 and not run.timed_out
    how = "timed out" if run.timed_out else f"exit {run.exit_code}"
    if not run.started:
        how = f"could not start: {printable(run.start_error or 'no such program')}"
    verdict = "pass" if ok else "fail"
    head = f"  validation: {paint(verdict, verdict)} ({how}, {_fmt(run.duration_s)} s)"
    lines = [head, "    $ " + " ".join(run.command)]
    tail = (run.stderr_tail or run.stdout_tail).strip().splitlines()[-5:]
    return lines + ["    | " + printable(line) for line in tail]


_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def _findings(bundle: BundleReport, findings: list[Finding], paint: Painter) -> list[str]:
    """Each finding with its fix; the findings that follow from a root listed under it, without a fix of their
    own (one mistake, one fix), as the Markdown report folds them."""
    follows = consequences(findings)
    under = {id(f) for fs in follows.values() for f in fs}
    out = []
    for f in sorted((f for f in findings if id(f) not in under), key=lambda f: _ORDER[f.severity]):
        sev = paint(f"{f.severity.value:7}", f.severity.value)
        out.append(f"  {sev} {f.id:24} {_where(bundle, f)}{f.message}")
        if f.severity in SHOWN_FIRST:  # the fix reads the findings listed with it, as they were listed
            out.append(f"          fix: {printable(remedy(f, bundle.path or '', findings))}")
        for after in follows.get(root_name(f) or "", []):
            out.append(f"          follows from it: {after.id} {_where(bundle, after)}{after.message}")
    return out


def _where(bundle: BundleReport, finding: Finding) -> str:
    file = finding.file or None
    shown = repo_path(bundle.path, file) or file if file else None
    where = f"{shown}:{finding.line}" if shown and finding.line else shown or ""
    return where + "  " if where else ""


def _fmt(value: JsonValue, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _figures(rule: RuleResult) -> tuple[str, str, str]:
    """measured, threshold and would-pass-at, with enough digits that a failing figure never reads as equal."""
    for digits in range(4, 10):
        shown = (_fmt(rule.measured, digits), _fmt(rule.threshold, digits), _fmt(rule.would_pass_at, digits))
        if rule.passed or shown[0] != shown[1]:
            break
    return shown


def _params(rule: RuleResult) -> str:
    return " ".join(f"{k}={_fmt(v)}" for k, v in rule.params.items() if k not in ("output", "check")) or "-"


def _comparison(comparison: Comparison, paint: Painter) -> list[str]:
    status = comparison.status
    head = f"  {comparison.graph} vs {comparison.against}: {paint(status, status)}"
    if comparison.skipped:
        return [head + f" ({comparison.skipped})"]
    faulty = comparison.case_errors
    if faulty:
        shown = ", ".join(f"'{n}'" for n in faulty[:5]) + (" ..." if len(faulty) > 5 else "")
        head += f" ({len(faulty)} case(s) have comparison.case errors: {shown})"
    # What changed in the product's words comes before any figure (the answers' rules, docs/answers.md).
    changed = [f"    answer changed: {line}" for line in change_lines(comparison.graph, comparison.changes)]
    rows = [("", "output", "check", "parameters", "measured", "threshold", "at pass rate", "pass rate", "worst case")]
    for r in comparison.rules:
        rows.append(
            (
                "✓" if r.passed else "✗",
                subject(r),
                r.check,
                _params(r) + rule_scope(r),
                *_figures(r),
                _fmt(r.pass_rate),
                r.worst_case or "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    table = ["    " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return [head, *changed, *table]
