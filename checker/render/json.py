"""The JSON report (its schema: schemas/report.schema.json)."""

from __future__ import annotations

import json
from typing import Any


def render(report: dict[str, Any], **_: Any) -> str:
    # allow_nan=False: a report is read by other tools, and NaN is not JSON.
    return json.dumps(report, indent=2, allow_nan=False, sort_keys=False) + "\n"
