"""Renderers: each turns the typed report (`checker.reports.model.Report`) into text. They never run a check.

Every renderer has one signature, `render(report, **options) -> str`: the options are those of
`RenderOptions`, and each format reads the ones that mean something to it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from checker.render.links import Links
    from checker.reports.model import Report

FORMATS = {
    "text": "checker.render.text",
    "json": "checker.render.json",
    "markdown": "checker.render.markdown",
    "junit": "checker.render.junit",
}


class RenderOptions(TypedDict, total=False):
    """What a caller may ask of any renderer."""

    colour: bool  # text: ANSI colours (a terminal)
    limit: int  # markdown: at most this many UTF-8 bytes
    notes: Sequence[str]  # markdown: trusted lines from the caller, added at the end
    limit_name: str  # markdown: which limit `limit` is, said when something is cut
    links: Links | None  # markdown: files, the commit and the run as links


def render(fmt: str, report: Report, **options: Unpack[RenderOptions]) -> str:
    module = importlib.import_module(FORMATS[fmt])
    text: str = module.render(report, **options)
    return text
