"""A bundle's findings as Markdown lists: errors with their fixes (checker/remedies.py), warnings, info
findings, each linked to its file and line when links are on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from checker.findings import Finding, Severity
from checker.remedies import remedy
from checker.render.escape import text
from checker.render.links import Links, repo_path
from checker.render.markdown.detail import Detail, View
from checker.render.markdown.words import code, count, spaced
from checker.render.roots import consequences, root_name
from checker.reports.model import BundleReport
from checker.sentences import bounded, visible


def bundle_repo_path(bundle: BundleReport, file: str | None, links: Links | None = None) -> str | None:
    """`file` (relative to the bundle) as a path from the repository's root, when it has one."""
    return repo_path(bundle.path, file, links.workspace if links else None)


def error_list(bundle: BundleReport, view: View) -> Iterator[str]:
    errors = [f for f in bundle.findings if f.severity is Severity.ERROR]
    if errors:
        yield from _numbered(errors, "error", bundle, view, f"**{count(len(errors), 'error')}**, each with its fix:")


def warning_list(bundle: BundleReport, view: View, collapsed: bool, counted: bool = False) -> Iterator[str]:
    """The warnings; `counted` when they fail the bundle (--strict, `fail-on: warning`): then they are shown
    as errors are, each with its fix, never folded."""
    warnings = [f for f in bundle.findings if f.severity is Severity.WARNING]
    if not warnings:
        return
    if counted:
        head = f"**⚠️ {count(len(warnings), 'warning')}**, counted as failures, each with its fix:"
        yield from _numbered(warnings, "warning", bundle, view, head)
        return
    groups = _groups(warnings, bundle, view.links)
    shown = _shown(groups, "warning", view.detail)
    view.cuts.add("warnings", len(groups) - len(shown))
    fold = collapsed or len(shown) > 3
    yield ""
    yield (
        f"<details><summary>⚠️ {count(len(warnings), 'warning')}</summary>"
        if fold
        else f"**⚠️ {count(len(warnings), 'warning')}:**"
    )
    yield ""
    for group in shown:
        yield f"- {_group_line(group, bundle, view)[0]} — fix: {group.fix}"
    if len(shown) < len(groups):
        yield ""
        yield f"_{len(groups) - len(shown)} more warnings are in the JSON report._"
    if fold:
        yield ""
        yield "</details>"


@dataclass
class _Group:
    """Findings of one id with one cause and so one fix: listed once, with each place it was found."""

    fix: str
    findings: list[Finding] = field(default_factory=list)


def _groups(found: list[Finding], bundle: BundleReport, links: Links | None = None) -> list[_Group]:
    groups: dict[tuple[str, str, str], _Group] = {}
    shown = _shown_path(bundle.path, links)
    for finding in found:
        fix = _remedy(finding, bundle, shown)
        key = (finding.id, cause(finding), fix)
        groups.setdefault(key, _Group(fix)).findings.append(finding)
    return list(groups.values())


def cause(finding: Finding) -> str:
    """What makes two findings of one id the same mistake: the explanation found when there is one, else the
    message with the names of its case, file and input left out (the places the same mistake was made)."""
    details = finding.details
    explanation = details.get("explanation")
    if isinstance(explanation, str) and explanation:
        return explanation
    message = finding.message
    names = sorted({v for k, v in details.items() if k in _PLACES and isinstance(v, str) and v}, key=len, reverse=True)
    for name in [*names, *([finding.file] if finding.file is not None else [])]:
        message = message.replace(name, "…")
    return message


_PLACES = ("case", "raw", "input", "path", "file", "output")
_LISTED = 12  # places named in one entry; the rest are counted


def _numbered(found: list[Finding], severity: str, bundle: BundleReport, view: View, head: str) -> Iterator[str]:
    """Numbered entries, one per (id, cause), each with its places and its fix as a paragraph of its own item
    (so that in a comment, where a newline is a line break, the fix stays with its finding). What a reader sees
    of each is at most two complete sentences; the rest is in a fold under it. Each paragraph of an item is
    indented by its number's width ("10. " is four characters), so that the list holds at any length; a fix
    already shown for an earlier entry is named by that entry's number, not repeated."""
    follows = consequences(found)
    under_roots = {id(f) for fs in follows.values() for f in fs}
    groups = _groups([f for f in found if id(f) not in under_roots], bundle, view.links)
    shown = _shown(groups, severity, view.detail)
    view.cuts.add(f"{severity}s", len(groups) - len(shown))
    yield ""
    yield head
    yield ""
    fixed: dict[str, int] = {}
    for i, group in enumerate(shown, 1):
        pad = " " * len(f"{i}. ")
        line, said_rest = _group_line(group, bundle, view)
        fix, fix_rest = visible(group.fix)
        yield f"{i}. {line}"
        yield ""
        if fix in fixed:
            yield f"{pad}**Fix:** as for {fixed[fix]}."
            fix_rest = ""
        else:
            fixed[fix] = i
            yield f"{pad}**Fix:** {fix}"
        yield ""
        after = follows.get(root_name(group.findings[0]) or "", [])
        following = [f"**Follows from it:** {_consequences_line(after, bundle, view)}"] if after else []
        folded = [part for part in (said_rest, fix_rest and f"**Fix, continued:** {fix_rest}") if part]
        folded += following
        if folded:
            yield f"{pad}<details><summary>More</summary>"
            yield ""
            for part in folded:
                yield f"{pad}{part}"
                yield ""
            yield f"{pad}</details>"
            yield ""
    if len(shown) < len(groups):
        yield f"_{len(groups) - len(shown)} more {severity}s are in the JSON report._"


def _consequences_line(after: list[Finding], bundle: BundleReport, view: View) -> str:
    """The findings that follow from a root, each by its id, place and first sentence, in one paragraph."""
    return "; ".join(_finding_line(f, bundle, view)[0] for f in after[:_LISTED]) + (
        f"; and {len(after) - _LISTED} more" if len(after) > _LISTED else ""
    )


def _group_line(group: _Group, bundle: BundleReport, view: View) -> tuple[str, str]:
    """The entry's visible line (its message's first sentences, then the other places of the same mistake),
    and the rest of its message."""
    first, rest = group.findings[0], group.findings[1:]
    line, more_said = _finding_line(first, bundle, view)
    if not rest:
        return line, more_said
    places = ", ".join(_place(f, bundle, view) for f in rest[:_LISTED])
    more = f" and {len(rest) - _LISTED} more" if len(rest) > _LISTED else ""
    return f"{line} — the same in {count(len(rest), 'more place')}: {places}{more}", more_said


def _place(finding: Finding, bundle: BundleReport, view: View) -> str:
    case = finding.details.get("case")
    where = _where(finding, bundle, view.links)
    return f"case '{text(case, 80)}' ({where})" if isinstance(case, str) else where


def _finding_line(finding: Finding, bundle: BundleReport, view: View) -> tuple[str, str]:
    """The finding's id, place and the first complete sentences of its message; and the rest of the message."""
    said, rest = visible(finding.message)
    limit = view.detail.message_chars
    message = message_markdown(said, limit)
    line = f"**{text(finding.id, 60)}** at {_where(finding, bundle, view.links)}: {message}"
    return line, message_markdown(rest, limit) if rest else ""


def message_markdown(said: str, limit: int) -> str:
    """A message as Markdown: what it puts in backticks shown as code, the rest escaped; cut, when it must be,
    after a complete sentence (never inside one, nor inside a parenthesis)."""
    said = bounded(said, limit)
    parts = said.split("`")
    if len(parts) % 2 == 0 or len(parts) > 41:  # unbalanced (or a flood of spans): show it all as text
        return text(said, limit)
    return "".join(spaced(part, limit) if i % 2 == 0 else f"`{code(part)}`" for i, part in enumerate(parts))


def _remedy(finding: Finding, bundle: BundleReport, shown: str) -> str:
    """The remedy as Markdown: its code spans kept (remedies put no backtick inside one), the rest escaped."""
    # The bundle's findings as they are: remedies read only the few they look for (filtering the whole list
    # here, for each of thousands of findings, made a large report's rendering quadratic).
    return message_markdown(remedy(finding, shown, bundle.findings), 600)


def _shown_path(path: str, links: Links | None) -> str:
    """The bundle's path as a command in a fix names it: relative to the workspace when it lies under it (the
    reader runs the command from the checkout, where the runner's absolute path means nothing)."""
    workspace = (links.workspace or "").rstrip("/") if links is not None else ""
    return path[len(workspace) + 1 :] if workspace and path.startswith(workspace + "/") else path


_T = TypeVar("_T")


def _shown(group: list[_T], severity: str, detail: Detail) -> list[_T]:
    if severity == "info" and not detail.info:
        return []
    cap = {"error": detail.errors, "warning": detail.warnings}.get(severity)
    return group if cap is None else group[:cap]


def _where(finding: Finding, bundle: BundleReport, links: Links | None) -> str:
    file = finding.file or bundle.manifest_file
    if not file:
        return "—"
    line = finding.line if finding.line is not None and finding.line > 0 else None
    path = bundle_repo_path(bundle, file, links) or file
    label = text(f"{path}:{line}" if line is not None else path, 160)
    if links is not None and bundle_repo_path(bundle, file, links) is not None:
        return f"[{label}]({links.blob(path, line)})"
    return label


def info_list(bundle: BundleReport, view: View) -> Iterator[str]:
    notes = [f for f in bundle.findings if f.severity is Severity.INFO]
    shown = _shown(notes, "info", view.detail)
    view.cuts.add("notes", len(notes) - len(shown))
    if not shown:
        return
    yield ""
    yield f"**\N{INFORMATION SOURCE}\ufe0f {count(len(notes), 'note')}:**"
    yield ""
    yield from (f"- {_finding_line(f, bundle, view)[0]}" for f in shown)
