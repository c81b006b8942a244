"""The Markdown report: the pull-request comment and the job summary, from the typed report.

A reviewer reads it top down, so it is ordered by what they act on: the verdict line; then each failing
bundle with its path, each error with its fix (checker/remedies.py); then warnings; then what changed
since the base; then the pieces and the comparisons, collapsed. A passing report is a few lines with
everything else in one collapsed block. With `links` (from the GitHub variables) every file and line
links into the repository and the footer links the commit and the run.

It renders whatever the report holds and trusts none of it: every name, label and message goes
through `escape.text`. It fits a size limit by leaving out the least important detail first (charts,
per-case figures, info findings, passing rules, then warnings and errors beyond the first few) and
says what it left out.

Its modules, by what they hold: `fitting` (the size limit; `render` is there), `detail` (how much a rendering
shows, what it left out), `document` (the sections, top down), `findings` (the lists of findings), `tables`
(the comparisons' rules and per-case figures), `charts` (Mermaid bar charts), `since_base` (what changed since
the base report) and `words` (the small marks and numbers they share).
"""

from __future__ import annotations

from checker.render.markdown.document import FOOTER_MARK, TITLE
from checker.render.markdown.fitting import COMMENT_LIMIT, DEFAULT_LIMIT, HEADER_RESERVE, SUMMARY_LIMIT, render

__all__ = ["COMMENT_LIMIT", "DEFAULT_LIMIT", "FOOTER_MARK", "HEADER_RESERVE", "SUMMARY_LIMIT", "TITLE", "render"]
