"""The report the action's `comment-only` mode reads: one file, or the merge of a matrix's files.

Reading and checking each file is `checker.reports.files`'; what is the action's own is that the reports of
one comment must be about one pull request and commit, since the comment is posted by what they say.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

from checker.reports.files import ReportError, load_report
from checker.reports.merge import MergeError, merge_reports
from checker.reports.model import Report


def read_reports(pattern: str, *, untrusted: bool = True) -> Report:
    """The report at `pattern`, or, when it is a glob matching several (matrix jobs), their merge.

    Each file is read and validated alone; the reports must name the same pull request and commit, since the
    comment is posted by what they say.
    """
    if not glob.has_magic(pattern):
        return load_report(Path(pattern), untrusted=untrusted)
    paths = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())  # noqa: PTH207  (absolute or relative patterns alike)
    if not paths:
        raise ReportError(f"no report matches {pattern}")
    if len(paths) == 1:
        return load_report(paths[0], untrusted=untrusted)
    reports = [load_report(p, untrusted=untrusted) for p in paths]
    # The legs of a zoo's matrix verify different bundles (each its own bundles input, and the plan's report
    # the reused ones): what must agree is the pull request and commit.
    contexts = {json.dumps({k: v for k, v in r.context.items() if k != "bundle_set"}, sort_keys=True) for r in reports}
    if len(contexts) > 1:
        raise ReportError(f"the reports matching {pattern} are about different pull requests or commits")
    try:
        merged = merge_reports(reports, names=[str(p) for p in paths])
    except MergeError as exc:
        raise ReportError(f"the reports matching {pattern} cannot be merged: {exc}") from None
    sets = list(dict.fromkeys(str(r.context["bundle_set"]) for r in reports if r.context.get("bundle_set")))
    if len(sets) > 1:
        merged.context["bundle_set"] = " ".join(sets)
    return merged
