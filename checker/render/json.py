"""The JSON report (its schema: schemas/report.schema.json)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from checker.reports.model import Report
from checker.reports.parts.values import json_figures

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from checker.render import RenderOptions


def render(report: Report, **options: Unpack[RenderOptions]) -> str:
    # allow_nan=False: a report is read by other tools, and NaN is not JSON; non-finite figures are written
    # as the strings "inf", "-inf" and "nan" instead.
    return json.dumps(json_figures(report.to_dict()), indent=2, allow_nan=False, sort_keys=False) + "\n"
