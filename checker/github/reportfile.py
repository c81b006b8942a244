"""Reading and writing the JSON report the action passes between its modes.

In `comment-only` mode the report comes from another workflow run, possibly a fork's: it is
untrusted data, bounded in size and validated against the report schema before anything reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from checker.errors import Error

MAX_REPORT_BYTES = 64 * 1024 * 1024


class ReportError(Error):
    """The report file is missing, too large, not JSON, or not a report."""


def read_report(path: Path, *, untrusted: bool = True) -> dict[str, Any]:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ReportError(f"cannot read the report {path}: {exc.strerror or exc}") from None
    if size > MAX_REPORT_BYTES:
        raise ReportError(f"the report {path} is {size} bytes, more than the {MAX_REPORT_BYTES} accepted")
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_not_json)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"the report {path} is not JSON: {exc}") from None
    except RecursionError:
        raise ReportError(f"the report {path} nests too deeply to be a report") from None
    if untrusted:
        try:
            validate(data, path)
        except RecursionError:
            raise ReportError(f"the report {path} nests too deeply to be a report") from None
    if not isinstance(data, dict):
        raise ReportError(f"the report {path} is not a JSON object")
    return data


def _not_json(name: str) -> Any:
    """Python's reader accepts NaN and Infinity, which JSON has not: a report never holds them."""
    raise ValueError(f"{name} is not a JSON value")


def validate(data: object, path: Path) -> None:
    from checker.manifest.schema import validator

    errors = sorted(validator("report").iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top)"
        message = str(first.message)[:300]
        raise ReportError(f"the report {path} does not match the report schema at {where}: {message}")


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    from checker.report import json_figures

    path.write_text(json.dumps(json_figures(report), indent=2, allow_nan=False) + "\n", encoding="utf-8")


def read_reports(pattern: str, *, untrusted: bool = True) -> dict[str, Any]:
    """The report at `pattern`, or, when it is a glob matching several (matrix jobs), their merge.

    Each file is read and validated alone; the reports must name the same pull request and commit, since the
    comment is posted by what they say.
    """
    import glob

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
    from checker.report_merge import MergeError, merge_reports

    try:
        return merge_reports(reports, names=[str(p) for p in paths])
    except MergeError as exc:
        raise ReportError(f"the reports matching {pattern} cannot be merged: {exc}") from None
