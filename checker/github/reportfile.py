"""The report the action's `comment-only` mode reads: one file, or the merge of a matrix's files.

Reading and checking each file is `checker.reports.files`'; what is the action's own is that the reports of
one comment must be about one pull request and commit, since the comment is posted by what they say.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from checker.reports.files import ReportError, read_report
from checker.reports.merge import MergeError, merge_reports


def read_reports(pattern: str, *, untrusted: bool = True) -> dict[str, Any]:
    """The report at `pattern`, or, when it is a glob matching several (matrix jobs), their merge.

    Each file is read and validated alone; the reports must name the same pull request and commit, since the
    comment is posted by what they say.
    """
    if not glob.has_magic(pattern):
        return read_report(Path(pattern), untrusted=untrusted)
    paths = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())  # noqa: PTH207  (absolute or relative patterns alike)
    if not paths:
        raise ReportError(f"no report matches {pattern}")
    reports = [read_report(p, untrusted=untrusted) for p in paths]
    if len(reports) == 1:
        return reports[0]
    contexts = {json.dumps(r.get("context") or {}, sort_keys=True) for r in reports}
    if len(contexts) > 1:
        raise ReportError(f"the reports matching {pattern} are about different pull requests or commits")
    try:
        return merge_reports(reports)
    except MergeError as exc:
        raise ReportError(f"the reports matching {pattern} cannot be merged: {exc}") from None
