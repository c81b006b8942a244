"""Fitting the Markdown report into a size limit: whole kinds of detail go first, least important first,
then a cap on findings or bundles is bisected; a last resort cuts whole lines.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from checker.findings import Severity
from checker.render.escape import forget
from checker.render.links import Links
from checker.render.markdown.detail import CAPS, LEVELS, Cuts, Detail
from checker.render.markdown.document import document
from checker.render.markdown.words import severity_count
from checker.reports.model import Report

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from checker.render import RenderOptions


COMMENT_LIMIT = 65_536  # characters in an issue comment's body
SUMMARY_LIMIT = 1_048_576  # bytes in one step's job summary; over it GitHub drops the whole summary
HEADER_RESERVE = 512  # room the sticky comment keeps for its hidden marker lines
DEFAULT_LIMIT = COMMENT_LIMIT - HEADER_RESERVE


def render(report: Report, **options: Unpack[RenderOptions]) -> str:
    """The report as Markdown of at most `limit` UTF-8 bytes (so also at most `limit` characters).

    `notes` are trusted Markdown lines from the caller, added at the end; `links` makes files, the commit
    and the run links. Markdown has no colour.
    """
    limit = options.get("limit", DEFAULT_LIMIT)
    limit_name = options.get("limit_name", "GitHub's comment size limit")
    try:
        return _fitted(report.printable(), options.get("notes", ()), limit_name, limit, options.get("links"))
    finally:
        forget()


def _fitted(report: Report, notes: Sequence[str], limit_name: str, limit: int, links: Links | None = None) -> str:
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
    report: Report,
    detail: Detail,
    *,
    notes: Sequence[str],
    limit_name: str,
    limit: int,
    links: Links | None = None,
) -> tuple[str, bool]:
    body = document(report, detail, Cuts(), notes, limit_name, links)
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


def _most(report: Report, what: str) -> int:
    """The largest useful cap: the most findings of that kind in one bundle, or the number of bundles."""
    if what == "bundles":
        return len(report.bundles)
    severity = Severity(what.removesuffix("s"))
    return max((severity_count(b, severity) for b in report.bundles), default=0)


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
