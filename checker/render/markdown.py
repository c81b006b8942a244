"""The Markdown report: the pull-request comment and the job summary, from the JSON-shaped report dict.

A reviewer reads it top down, so it is ordered by what they act on: the verdict line; then each failing
bundle with its path, each error with its fix (checker/remedies.py); then warnings; then what changed
since the base; then the pieces and the comparisons, collapsed. A passing report is a few lines with
everything else in one collapsed block. With `links` (from the GitHub variables) every file and line
links into the repository and the footer links the commit and the run.

It renders whatever the report holds and trusts none of it: every name, label and message goes
through `escape.text`. It fits a size limit by leaving out the least important detail first (charts,
per-case figures, info findings, passing rules, then warnings and errors beyond the first few) and
says what it left out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeGuard

from checker.changes import changed_rules
from checker.remedies import remedy
from checker.render.escape import forget, mermaid, text
from checker.render.gains import gain_sentences
from checker.render.links import Links, repo_path
from checker.render.slices import rule_scope
from checker.report import mappings as _dicts

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from checker.render import RenderOptions


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


def render(report: Mapping[str, Any], **options: Unpack[RenderOptions]) -> str:
    """The report as Markdown of at most `limit` UTF-8 bytes (so also at most `limit` characters).

    `notes` are trusted Markdown lines from the caller, added at the end; `links` makes files, the commit
    and the run links. Markdown has no colour.
    """
    limit = options.get("limit", DEFAULT_LIMIT)
    limit_name = options.get("limit_name", "GitHub's comment size limit")
    try:
        return _fitted(report, options.get("notes", ()), limit_name, limit, options.get("links"))
    finally:
        forget()


def _fitted(
    report: Mapping[str, Any], notes: Sequence[str], limit_name: str, limit: int, links: Links | None = None
) -> str:
    """The most detailed rendering that fits: whole kinds of detail go first, then a cap is bisected."""
    attempt = functools.partial(_attempt, report, notes=notes, limit_name=limit_name, limit=limit, links=links)
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
    report: Mapping[str, Any],
    detail: Detail,
    *,
    notes: Sequence[str],
    limit_name: str,
    limit: int,
    links: Links | None = None,
) -> tuple[str, bool]:
    body = _document(report, detail, Cuts(), notes, limit_name, links)
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


def _document(
    report: Mapping[str, Any],
    detail: Detail,
    cuts: Cuts,
    notes: Sequence[str],
    limit_name: str,
    links: Links | None = None,
) -> str:
    bundles = _dicts(report.get("bundles"))
    view = View(detail, cuts, links, _changes(report.get("changes")))
    failing = [b for b in bundles if b.get("status") == "fail"]
    parts = [_headline(report, bundles)]
    if failing:
        for i, bundle in enumerate(failing):
            if detail.full_bundles is not None and i >= detail.full_bundles:
                cuts.add("bundle details")
                parts.append(_short_line(bundle, view))
                continue
            parts.append("\n".join(_failing_bundle(bundle, view)))
        passing = [b for b in bundles if b.get("status") != "fail"]
        if passing:
            parts.append("\n".join(_passing_block(passing, view, f"✅ {_count(len(passing), 'other bundle')} passed")))
    elif bundles:
        parts.append(_passing_line(bundles, view))
        parts.extend(_since_base_line(bundles, view))
        parts.append("\n".join(_passing_block(bundles, view, "Details: pieces, comparisons and environment")))
    parts.extend(_removed_since_base(view))
    if failing or not bundles:
        parts.append("\n".join(_environment(report.get("environment"))))
    elif parts[-1].endswith("</details>"):  # a passing report keeps its environment in its one collapsed block
        environment = "\n".join(_environment(report.get("environment"), heading=True))
        parts[-1] = parts[-1].removesuffix("</details>") + (environment + "\n\n" if environment else "") + "</details>"
    parts.extend(notes)
    note = cuts.note(limit_name)
    if note:
        parts.append(note)
    parts.append(_footer(report, links))
    return "\n\n".join(p for p in parts if p) + "\n"


@dataclass
class View:
    """What one rendering shows, and how: the detail level, what it left out, links, the changes by bundle."""

    detail: Detail
    cuts: Cuts
    links: Links | None
    changes: dict[str, Mapping[str, Any]]


# ----- the top: one verdict line for the run


def _headline(report: Mapping[str, Any], bundles: list[Mapping[str, Any]]) -> str:
    failed = sum(1 for b in bundles if b.get("status") == "fail")
    if not bundles:
        return f"## ⚠️ {TITLE}: no bundle was verified"
    if failed:
        line = f"## ❌ {TITLE}: {failed} of {len(bundles)} {_plural(len(bundles), 'bundle')} failed"
    else:
        strict = " (warnings count as failures)" if report.get("strict") is True else ""
        line = f"## ✅ {TITLE}: {_count(len(bundles), 'bundle')} passed{strict}"
    return line + _not_run_suffix(bundles)


def _not_run_suffix(bundles: list[Mapping[str, Any]]) -> str:
    """Checks that could not run (a bundle's `not_run`, when the report has it): they belong in the verdict."""
    items = [item for b in bundles for item in _dicts(b.get("not_run"))]
    if not items:
        return ""
    named = "; ".join(
        text(f"{item.get('check') or '?'}" + (f": {item['reason']}" if item.get("reason") else ""), 120)
        for item in items[:2]
    )
    more = f"; {len(items) - 2} more" if len(items) > 2 else ""
    return f" — {_count(len(items), 'check')} not run: {named}{more}"


def _bundle_name(bundle: Mapping[str, Any]) -> str:
    return text(bundle.get("name") or bundle.get("path") or "(unnamed bundle)", 120)


def _title(bundle: Mapping[str, Any]) -> str:
    version = f" {text(bundle['version'], 80)}" if bundle.get("version") else ""
    return f"{_bundle_name(bundle)}{version}"


def _severity_count(bundle: Mapping[str, Any], severity: str) -> int:
    return sum(1 for f in _dicts(bundle.get("findings")) if f.get("severity") == severity)


# ----- a failing bundle: its path, its errors with their fixes, its warnings, then the rest collapsed


def _failing_bundle(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    yield f"### ❌ {_title(bundle)} — {_bundle_path(bundle, view.links)}"
    yield from _error_list(bundle, view)
    yield from _warning_list(bundle, view, collapsed=False)
    yield from _since_base(bundle, view)
    yield from _collapsed_rest(bundle, view)


def _short_line(bundle: Mapping[str, Any], view: View) -> str:
    """A bundle left out for size: its verdict, path and counts."""
    errors, warnings = _severity_count(bundle, "error"), _severity_count(bundle, "warning")
    return (
        f"### {_mark(bundle.get('status'))} {_title(bundle)} — {_bundle_path(bundle, view.links)}\n\n"
        f"{_count(errors, 'error')}, {_count(warnings, 'warning')} (details in the JSON report)"
    )


def _bundle_path(bundle: Mapping[str, Any], links: Links | None) -> str:
    """The bundle's manifest as a repository path, linked when links are on."""
    path = bundle.get("path")
    manifest = bundle.get("manifest")
    shown = _repo_path(bundle, manifest) if isinstance(manifest, str) else None
    label = shown or (path if isinstance(path, str) else "?")
    if links is not None and shown is not None:
        return f"[{text(label, 200)}]({links.blob(shown)})"
    return text(label, 200)


def _repo_path(bundle: Mapping[str, Any], file: object, links: Links | None = None) -> str | None:
    """`file` (relative to the bundle) as a path from the repository's root, when it has one."""
    return repo_path(bundle.get("path"), file, links.workspace if links else None)


def _error_list(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    errors = [f for f in _dicts(bundle.get("findings")) if f.get("severity") == "error"]
    if not errors:
        return
    shown = _shown(errors, "error", view.detail)
    view.cuts.add("errors", len(errors) - len(shown))
    yield ""
    yield f"**{_count(len(errors), 'error')}**, each with its fix:"
    yield ""
    for i, finding in enumerate(shown, 1):
        yield f"{i}. {_finding_line(finding, bundle, view)}<br>"
        yield f"   **Fix:** {_remedy(finding, bundle)}"
    if len(shown) < len(errors):
        yield ""
        yield f"_{len(errors) - len(shown)} more errors are in the JSON report._"


def _warning_list(bundle: Mapping[str, Any], view: View, collapsed: bool) -> Iterator[str]:
    warnings = [f for f in _dicts(bundle.get("findings")) if f.get("severity") == "warning"]
    if not warnings:
        return
    shown = _shown(warnings, "warning", view.detail)
    view.cuts.add("warnings", len(warnings) - len(shown))
    yield ""
    if collapsed or len(shown) > 3:
        yield f"<details><summary>⚠️ {_count(len(warnings), 'warning')}</summary>"
    else:
        yield f"**⚠️ {_count(len(warnings), 'warning')}:**"
    yield ""
    for finding in shown:
        yield f"- {_finding_line(finding, bundle, view)} — fix: {_remedy(finding, bundle)}"
    if len(shown) < len(warnings):
        yield ""
        yield f"_{len(warnings) - len(shown)} more warnings are in the JSON report._"
    if collapsed or len(shown) > 3:
        yield ""
        yield "</details>"


def _finding_line(finding: Mapping[str, Any], bundle: Mapping[str, Any], view: View) -> str:
    message = text(finding.get("message"), view.detail.message_chars)
    return f"**{text(finding.get('id'), 60)}** at {_where(finding, bundle, view.links)}: {message}"


def _remedy(finding: Mapping[str, Any], bundle: Mapping[str, Any]) -> str:
    """The remedy as Markdown: its code spans kept (remedies put no backtick inside one), the rest escaped."""
    path = bundle.get("path")
    said = remedy(finding, path if isinstance(path, str) else "")
    parts = said.split("`")
    if len(parts) % 2 == 0:  # unbalanced: show it all as text
        return text(said, 400)
    return "".join(_spaced(part) if i % 2 == 0 else f"`{_code(part)}`" for i, part in enumerate(parts))


def _spaced(part: str) -> str:
    """Escaped text that keeps the spaces at its ends (they separate it from the code spans around it)."""
    lead = " " if part[:1].isspace() else ""
    trail = " " if part[-1:].isspace() and part.strip() else ""
    return lead + text(part, 300) + trail


def _code(value: str) -> str:
    """Text inside a code span: Markdown and HTML are not read there; keep it one printable line."""
    return "".join(c for c in value if c.isprintable() and c != "`")[:300] or " "


def _shown(group: list[Mapping[str, Any]], severity: str, detail: Detail) -> list[Mapping[str, Any]]:
    if severity == "info" and not detail.info:
        return []
    cap = {"error": detail.errors, "warning": detail.warnings}.get(severity)
    return group if cap is None else group[:cap]


def _where(finding: Mapping[str, Any], bundle: Mapping[str, Any], links: Links | None) -> str:
    file = finding.get("file") or bundle.get("manifest")
    if not isinstance(file, str) or not file:
        return "—"
    line = finding.get("line")
    line = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
    path = _repo_path(bundle, file, links) or file
    label = text(f"{path}:{line}" if line is not None else path, 160)
    if links is not None and _repo_path(bundle, file, links) is not None:
        return f"[{label}]({links.blob(path, line)})"
    return label


def _collapsed_rest(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    pieces = _pieces(bundle)
    present = sum(1 for v in pieces.values() if v == "present")
    comparisons = _dicts(bundle.get("comparisons"))
    verdicts = ", ".join(f"{text(c.get('graph') or '?', 40)} {_mark(c.get('status'))}" for c in comparisons[:8])
    summary = f"Pieces ({present} of {len(pieces)} present)" + (f" and comparisons: {verdicts}" if verdicts else "")
    yield ""
    yield f"<details><summary>{summary}</summary>"
    yield from _inner(bundle, view)
    yield ""
    yield "</details>"


def _inner(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    """The detail under a bundle's fold: identity, the seven pieces, notes, comparisons, validation."""
    yield ""
    yield _identity(bundle)
    yield from _checklist(_pieces(bundle))
    yield from _info_list(bundle, view)
    for comparison in _dicts(bundle.get("comparisons")):
        yield from _comparison(comparison, view.detail, view.cuts)
    gains = gain_sentences(bundle)
    if gains:
        yield ""
        yield "#### Gain over the baseline"
        yield ""
        yield from (f"- {text(line, 600)}" for line in gains)
    yield from _runtimes(bundle)
    yield from _key_values("Validation command", bundle.get("validation"))


def _runtimes(bundle: Mapping[str, Any]) -> Iterator[str]:
    """One row per runtime (--runtime), one column per rule: its verdict and measured figure."""
    from checker.render.runtimes import runtime_table

    table = runtime_table(bundle)
    if table is None:
        return
    heads, rows = table
    yield ""
    yield "#### Rules in each runtime"
    yield ""
    yield "| " + " | ".join(text(h, 120) for h in heads) + " |"
    yield "|" + " --- |" * len(heads)
    for row in rows:
        yield "| " + " | ".join(text(cell, 120) for cell in row) + " |"


def _info_list(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    notes = [f for f in _dicts(bundle.get("findings")) if f.get("severity") == "info"]
    shown = _shown(notes, "info", view.detail)
    view.cuts.add("notes", len(notes) - len(shown))
    if not shown:
        return
    yield ""
    yield f"**\N{INFORMATION SOURCE}\ufe0f {_count(len(notes), 'note')}:**"
    yield ""
    yield from (f"- {_finding_line(f, bundle, view)}" for f in shown)


# ----- passing bundles: one line, the rest collapsed


def _passing_line(bundles: list[Mapping[str, Any]], view: View) -> str:
    if len(bundles) == 1:
        b = bundles[0]
        pieces = _pieces(b)
        present = sum(1 for v in pieces.values() if v == "present")
        comparisons = _dicts(b.get("comparisons"))
        judged = sum(1 for c in comparisons if c.get("status") == "pass")
        warnings = _severity_count(b, "warning")
        facts = [f"{present} of {len(pieces)} pieces", f"{judged} of {len(comparisons)} comparisons passed"]
        if warnings:
            facts.append(f"⚠️ {_count(warnings, 'warning')}")
        return f"{_title(b)} — {_bundle_path(b, view.links)} · " + " · ".join(facts)
    names = ", ".join(_title(b) for b in bundles[:5])
    more = f" and {len(bundles) - 5} more" if len(bundles) > 5 else ""
    warnings = sum(_severity_count(b, "warning") for b in bundles)
    return f"{names}{more}" + (f" · ⚠️ {_count(warnings, 'warning')}" if warnings else "")


def _passing_block(bundles: list[Mapping[str, Any]], view: View, summary: str) -> Iterator[str]:
    yield f"<details><summary>{summary}</summary>"
    yield ""
    yield _overview(bundles, view)
    for i, bundle in enumerate(bundles):
        if view.detail.full_bundles is not None and i >= view.detail.full_bundles:
            view.cuts.add("bundle details")
            continue
        yield ""
        yield f"#### ✅ {_title(bundle)} — {_bundle_path(bundle, view.links)}"
        yield from _warning_list(bundle, view, collapsed=False)
        yield from _since_base(bundle, view)
        yield from _inner(bundle, view)
    yield ""
    yield "</details>"


def _overview(bundles: list[Mapping[str, Any]], view: View) -> str:
    rows = ["| | bundle | path | errors | warnings | pieces |", "| --- | --- | --- | ---: | ---: | ---: |"]
    for b in bundles:
        pieces = _pieces(b)
        present = sum(1 for v in pieces.values() if v == "present")
        rows.append(
            f"| {_mark(b.get('status'))} | {_title(b)} | {_bundle_path(b, view.links)} "
            f"| {_severity_count(b, 'error')} | {_severity_count(b, 'warning')} | {present}/{len(pieces)} |"
        )
    return "\n".join(rows)


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


# ----- what changed since the base


def _changes(value: object) -> dict[str, Mapping[str, Any]]:
    if not isinstance(value, Mapping):
        return {}
    return {str(e.get("path")): e for e in _dicts(value.get("bundles"))}


def _change_for(bundle: Mapping[str, Any], view: View) -> Mapping[str, Any] | None:
    return view.changes.get(str(bundle.get("path")))


def _since_base_line(bundles: list[Mapping[str, Any]], view: View) -> Iterator[str]:
    """For a passing report: the change a reviewer asks about first, on one line."""
    if not view.changes:
        return
    moved = [(b, r) for b in bundles if (e := _change_for(b, view)) for r in changed_rules(e)]
    new = [b for b in bundles if (e := _change_for(b, view)) and e.get("state") == "new"]
    pieces = sorted({str(p) for b in bundles if (e := _change_for(b, view)) for p in _strs(e.get("pieces"))})
    facts = []
    if moved:
        _, top = max(moved, key=lambda pair: abs(_relative_delta(pair[1])))
        facts.append(_rule_change_text(top) + (f" and {_count(len(moved) - 1, 'more rule')}" if len(moved) > 1 else ""))
    if pieces:
        facts.append("changed: " + ", ".join(text(p.replace("_", " "), 40) for p in pieces))
    if new:
        facts.append(f"{_count(len(new), 'bundle')} new")
    yield "**Since the base:** " + ("; ".join(facts) if facts else "no change in pieces, figures or findings")


def _since_base(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    entry = _change_for(bundle, view)
    if entry is None:
        return
    yield ""
    if entry.get("state") == "new":
        yield "**Since the base:** 🆕 new in this change (the base has no such bundle)."
        return
    facts = _change_facts(entry)
    yield "**Since the base:** " + ("; ".join(facts) if facts else "no change in pieces, figures or findings") + "."
    rules = list(changed_rules(entry))
    if rules:
        yield from _change_table(rules, entry)
        yield from _change_chart(rules, view)
    yield from _finding_changes(entry, view)


def _change_facts(entry: Mapping[str, Any]) -> list[str]:
    facts = []
    status = entry.get("status")
    if isinstance(status, Mapping) and status.get("base") != status.get("head"):
        facts.append(f"was {text(status.get('base'), 20)}, now {text(status.get('head'), 20)}")
    pieces = _strs(entry.get("pieces"))
    if pieces:
        facts.append("changed pieces: " + ", ".join(text(p.replace("_", " "), 40) for p in pieces))
    findings = entry.get("findings")
    if isinstance(findings, Mapping):
        new, resolved = len(_dicts(findings.get("new"))), len(_dicts(findings.get("resolved")))
        if new or resolved:
            facts.append(f"{_count(new, 'new finding')}, {resolved} resolved")
    cases = entry.get("cases")
    if isinstance(cases, Mapping):
        for key in ("added", "removed"):
            names = _strs(cases.get(key))
            if names:
                shown = ", ".join(text(n, 40) for n in names[:5]) + (" …" if len(names) > 5 else "")
                facts.append(f"cases {key}: {shown}")
    return facts


def _change_table(rules: list[Mapping[str, Any]], entry: Mapping[str, Any]) -> Iterator[str]:
    yield ""
    yield "| rule | base | head | change | threshold | |"
    yield "| --- | ---: | ---: | ---: | ---: | --- |"
    for r in rules[:30]:
        crossed = {"now fails": "❌ now fails", "now passes": "✅ now passes"}.get(str(r.get("crossed")), "")
        delta = r.get("delta")
        shown = f"{float(delta):+.4g}" if _is_number(delta) else "—"
        yield (
            f"| {_change_rule_name(r)} | {_number(r.get('base'))} | {_number(r.get('head'))} | {shown} "
            f"| {_number(r.get('threshold'))} | {crossed} |"
        )
    unchanged = len(_dicts(entry.get("rules"))) - len(rules)
    if unchanged > 0:
        yield ""
        yield f"_{_count(unchanged, 'other rule')} measured the same._"


def _change_rule_name(rule: Mapping[str, Any]) -> str:
    side = " (vs baseline)" if rule.get("against") == "baseline" else ""
    return text(f"{rule.get('graph', '?')}{side} {rule.get('output', '?')} {rule.get('check', '?')}", 160)


def _rule_change_text(rule: Mapping[str, Any]) -> str:
    delta = rule.get("delta")
    change = f" ({float(delta):+.3g})" if _is_number(delta) else ""
    crossed = f", {text(rule['crossed'], 20)}" if rule.get("crossed") else ""
    return f"{_change_rule_name(rule)} {_number(rule.get('base'))} → {_number(rule.get('head'))}{change}{crossed}"


def _relative_delta(rule: Mapping[str, Any]) -> float:
    delta, threshold = rule.get("delta"), rule.get("threshold")
    if rule.get("crossed"):
        return float("inf")
    if not _is_number(delta):
        return 0.0
    return float(delta) / float(threshold) if _is_number(threshold) and threshold else float(delta)


def _change_chart(rules: list[Mapping[str, Any]], view: View) -> Iterator[str]:
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


def _finding_changes(entry: Mapping[str, Any], view: View) -> Iterator[str]:
    findings = entry.get("findings")
    if not isinstance(findings, Mapping):
        return
    for key, title in (("new", "New findings"), ("resolved", "Resolved findings")):
        found = _dicts(findings.get(key))
        if not found:
            continue
        yield ""
        yield f"<details><summary>{title} ({len(found)})</summary>"
        yield ""
        for f in found[:20]:
            where = f" ({text(f['file'], 120)})" if isinstance(f.get("file"), str) else ""
            message = text(f.get("message"), view.detail.message_chars)
            yield f"- {text(f.get('severity'), 10)} **{text(f.get('id'), 60)}**{where}: {message}"
        yield ""
        yield "</details>"


def _removed_since_base(view: View) -> Iterator[str]:
    removed = [e for e in view.changes.values() if e.get("state") == "removed"]
    if removed:
        names = ", ".join(text(e.get("path") or "?", 120) for e in removed[:10])
        yield f"_Since the base, removed: {names}._"


def _strs(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


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
    faulty = [str(n) for n in comparison.get("case_errors") or []]
    if faulty:
        yield ""
        yield text(_case_errors(faulty), detail.message_chars)
    rules = _dicts(comparison.get("rules"))
    shown = rules if detail.passing_rules else [r for r in rules if r.get("passed") is not True]
    cuts.add("passing rules", len(rules) - len(shown))
    if shown:
        yield from _rule_table(shown)
    yield from _chart(comparison, rules, detail, cuts)
    yield from _cases(rules, detail, cuts)
    yield from _key_values("Diagnosis", comparison.get("diagnosis"))


def _case_errors(names: list[str]) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:5]) + (" ..." if len(names) > 5 else "")
    return f"Not a pass: {len(names)} case(s) have comparison.case errors ({shown})."


def _rule_table(rules: list[Mapping[str, Any]]) -> Iterator[str]:
    yield ""
    yield "| | rule | measured | threshold | measured at the pass rate asked | worst case | cases passing |"
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
    return text(f"{rule.get('output', '?')} {rule.get('check', '?')}{args}{rule_scope(rule)}", 300)


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
WORST_PASSING = 3  # passing cases shown beside the failing ones, worst first


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


def _case_fails(rule: Mapping[str, Any], value: object) -> bool:
    threshold = rule.get("threshold")
    if not _is_number(value):
        return True  # not measured
    if not _is_number(threshold):
        return False
    return float(value) < float(threshold) if rule.get("direction") == "min" else float(value) > float(threshold)


def _badness(rule: Mapping[str, Any], value: object) -> float:
    if not _is_number(value):
        return float("inf")
    return -float(value) if rule.get("direction") == "min" else float(value)


def _cases(rules: list[Mapping[str, Any]], detail: Detail, cuts: Cuts) -> Iterator[str]:
    """Per failing rule: its failing cases, the worst few passing ones, and how many more pass."""
    rows: list[str] = []
    for r in rules:
        cases = r.get("cases")
        if r.get("passed") is True or not isinstance(cases, Mapping):
            continue
        ordered = sorted(cases.items(), key=lambda item: _badness(r, item[1]), reverse=True)
        failing = [(n, v) for n, v in ordered if _case_fails(r, v)]
        passing = [(n, v) for n, v in ordered if not _case_fails(r, v)]
        name = _rule_name(r)
        rows.extend(f"| {name} | {text(n, 80)} | {_number(v)} | ❌ |" for n, v in failing)
        rows.extend(f"| {name} | {text(n, 80)} | {_number(v)} | ✅ |" for n, v in passing[:WORST_PASSING])
        if len(passing) > WORST_PASSING:
            rows.append(f"| {name} | _{len(passing) - WORST_PASSING} more cases pass_ | | |")
    if not rows:
        return
    if not detail.cases:
        cuts.add("per-case figures", len(rows))
        return
    yield ""
    yield "<details><summary>Per-case figures of the failing rules: failing cases, then the worst passing</summary>"
    yield ""
    yield "| rule | case | measured | |"
    yield "| --- | --- | ---: | --- |"
    yield from rows
    yield ""
    yield "</details>"


# ----- the environment and the footer


def _environment(environment: object, heading: bool = False) -> Iterator[str]:
    if not isinstance(environment, Mapping) or not environment:
        return
    keys = [k for k in ENVIRONMENT_ORDER if k in environment]
    keys += sorted(str(k) for k in environment if k not in ENVIRONMENT_ORDER)
    if heading:
        yield "#### Environment"
    else:
        yield "<details><summary>Environment</summary>"
    yield ""
    yield "| | |"
    yield "| --- | --- |"
    for key in keys[:30]:
        yield f"| {text(key, 60)} | {text(environment[key], 200)} |"
    if not heading:
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


FOOTER_MARK = "<!-- onnx-release-checker:footer -->"
_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(:\d\d)?(\.\d+)?Z$")


def _footer(report: Mapping[str, Any], links: Links | None) -> str:
    """Commit and run (linked), the checker's version, and when it ran; hidden-marked, so that a comment
    whose only change is its footer is not sent again."""
    version = text(report.get("checker_version") or "?", 40)
    facts = []
    if links is not None:
        facts.append(f"commit [`{links.sha[:7]}`]({links.commit()})")
        run = links.run()
        if run is not None:
            facts.append(f"[run {links.run_id}]({run})")
    facts.append(f"onnx-release-checker {version}")
    created = report.get("created_at")
    found = _TIME.match(created) if isinstance(created, str) else None
    if found:
        facts.append(f"{found.group(1)} {found.group(2)} UTC")
    if links is None:
        facts.append("`checker verify --format markdown` shows this report locally")
    return f"{FOOTER_MARK}\n<sub>{' · '.join(facts)}.</sub>"


# ----- small helpers


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
