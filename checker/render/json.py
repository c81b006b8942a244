"""The JSON report (its schema: schemas/report.schema.json)."""

from __future__ import annotations

import json
from typing import Any

from checker.report import json_figures


def render(report: dict[str, Any], **_: Any) -> str:
    # allow_nan=False: a report is read by other tools, and NaN is not JSON; non-finite figures are written
    # as the strings "inf", "-inf" and "nan" instead.
    return json.dumps(json_figures(report), indent=2, allow_nan=False, sort_keys=False) + "\n"
