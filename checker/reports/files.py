"""Report files: read (bounded in size, checked against schemas/report.schema.json) and written.

A report file may come from another workflow run, possibly a fork's (the action's `comment-only` mode), or
from anyone (`checker report merge|diff`): it is untrusted data, bounded in size and validated against the
report schema before anything reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from checker.errors import Error
from checker.reports.model import Report
from checker.reports.parts.values import json_figures

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


def load_report(path: Path, *, untrusted: bool = True) -> Report:
    """The report file read back typed, as `checker verify` made it (after read_report's checks)."""
    data = read_report(path, untrusted=untrusted)
    try:
        return Report.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # well-formed JSON, and no more
        raise ReportError(f"the report {path} holds a part that is not as the checker writes it: {exc!r}") from None


def _not_json(name: str) -> Any:
    """Python's reader accepts NaN and Infinity, which JSON has not: a report never holds them."""
    raise ValueError(f"{name} is not a JSON value")


def validate(data: object, path: Path) -> None:
    from checker.manifest.schema import validator  # loaded here: jsonschema is for a report file only

    errors = sorted(validator("report").iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top)"
        message = str(first.message)[:300]
        raise ReportError(f"the report {path} does not match the report schema at {where}: {message}")


def write_report(path: Path, report: Report) -> None:
    path.write_text(json.dumps(json_figures(report.to_dict()), indent=2, allow_nan=False) + "\n", encoding="utf-8")
