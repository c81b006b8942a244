"""The JSON report (its schema: schemas/report.schema.json)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from checker.reports.model import json_figures

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from checker.render import RenderOptions


def render(report: Mapping[str, Any], **options: Unpack[RenderOptions]) -> str:
    # allow_nan=False: a report is read by other tools, and NaN is not JSON; non-finite figures are written
    # as the strings "inf", "-inf" and "nan" instead.
    return json.dumps(json_figures(report), indent=2, allow_nan=False, sort_keys=False) + "\n"
