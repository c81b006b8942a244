"""The settings a transform's result depends on: without them, re-running it cannot be shown to give the variant.

onnxruntime's quantize_static calibrates on data: which cases (`calibration_cases`, the checker's own setting:
a count of the first cases or their names) and how (`calibrate_method`) decide every scale and zero point.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DECISIVE = {"quantize_static": ("calibration_cases", "calibrate_method")}
# What each deciding setting takes, as a warning about its absence says it.
TAKES = {
    "calibration_cases": "the cases calibrated on: a count of the bundle's first cases (calibration_cases: 8) or "
    "their names (calibration_cases: [meadow, dusk])",
    "calibrate_method": "onnxruntime's CalibrationMethod name (MinMax, its default, Entropy, Percentile or "
    "Distribution)",
}


def left_out(transform: Mapping[str, Any]) -> list[str]:
    """The deciding settings `transform.settings` leaves out (none for a tool without calibration)."""
    tool = str(transform.get("tool", "")).rsplit(".", 1)[-1]
    settings = transform.get("settings")
    given = settings if isinstance(settings, Mapping) else {}
    return [key for key in DECISIVE.get(tool, ()) if key not in given]
