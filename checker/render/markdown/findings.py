"""A bundle's findings as Markdown lists: errors with their fixes (checker/remedies.py), warnings, info
findings, each linked to its file and line when links are on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from checker.remedies import remedy
from checker.render.escape import text
from checker.render.links import Links, repo_path
from checker.render.markdown.detail import Detail, View
from checker.render.markdown.words import code, count, spaced
from checker.reports.model import mappings as _dicts


def bundle_repo_path(bundle: Mapping[str, Any], file: object, links: Links | None = None) -> str | None:
    """`file` (relative to the bundle) as a path from the repository's root, when it has one."""
    return repo_path(bundle.get("path"), file, links.workspace if links else None)


def error_list(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    errors = [f for f in _dicts(bundle.get("findings")) if f.get("severity") == "error"]
    if not errors:
        return
    shown = _shown(errors, "error", view.detail)
    view.cuts.add("errors", len(errors) - len(shown))
    yield ""
    yield f"**{count(len(errors), 'error')}**, each with its fix:"
    yield ""
    for i, finding in enumerate(shown, 1):
        yield f"{i}. {_finding_line(finding, bundle, view)}<br>"
        yield f"   **Fix:** {_remedy(finding, bundle)}"
    if len(shown) < len(errors):
        yield ""
        yield f"_{len(errors) - len(shown)} more errors are in the JSON report._"


def warning_list(bundle: Mapping[str, Any], view: View, collapsed: bool) -> Iterator[str]:
    warnings = [f for f in _dicts(bundle.get("findings")) if f.get("severity") == "warning"]
    if not warnings:
        return
    shown = _shown(warnings, "warning", view.detail)
    view.cuts.add("warnings", len(warnings) - len(shown))
    yield ""
    if collapsed or len(shown) > 3:
        yield f"<details><summary>⚠️ {count(len(warnings), 'warning')}</summary>"
    else:
        yield f"**⚠️ {count(len(warnings), 'warning')}:**"
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
    return "".join(spaced(part) if i % 2 == 0 else f"`{code(part)}`" for i, part in enumerate(parts))


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
    path = bundle_repo_path(bundle, file, links) or file
    label = text(f"{path}:{line}" if line is not None else path, 160)
    if links is not None and bundle_repo_path(bundle, file, links) is not None:
        return f"[{label}]({links.blob(path, line)})"
    return label


def info_list(bundle: Mapping[str, Any], view: View) -> Iterator[str]:
    notes = [f for f in _dicts(bundle.get("findings")) if f.get("severity") == "info"]
    shown = _shown(notes, "info", view.detail)
    view.cuts.add("notes", len(notes) - len(shown))
    if not shown:
        return
    yield ""
    yield f"**\N{INFORMATION SOURCE}\ufe0f {count(len(notes), 'note')}:**"
    yield ""
    yield from (f"- {_finding_line(f, bundle, view)}" for f in shown)
