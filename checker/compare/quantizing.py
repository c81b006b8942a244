"""Running a variant's recorded transform again: the onnxruntime.quantization function its `transform.tool`
names, with its `settings` (enum names resolved) and the calibration cases they name, on the baseline graph.

`checker diagnose --reproduce` and `--requantize` start from it, and so does the platforms stage when it
measures a re-quantizing remedy (`reduce_range`) on the platform where a variant fails.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from checker.compare.quiet import quietly
from checker.context import Case
from checker.errors import BundleError
from checker.manifest.model.variants import Transform

TOOLS = ("quantize_static", "quantize_dynamic")
_ENUMS = {
    "quant_format": "QuantFormat",
    "activation_type": "QuantType",
    "weight_type": "QuantType",
    "calibrate_method": "CalibrationMethod",
}
_OWN_SETTINGS = ("calibration_cases",)  # read by the checker, not passed to onnxruntime


def quantizer(tool: str) -> Callable[..., Any]:
    name = str(tool).rsplit(".", 1)[-1]
    if name not in TOOLS:
        raise BundleError(
            f"re-quantizing re-runs onnxruntime.quantization's {' or '.join(TOOLS)}; the variant's tool is '{tool}'"
        )
    import onnxruntime.quantization as q

    function: Callable[..., Any] = quietly(getattr(q, name))  # its own log lines stay off the screen
    return function


def quant_kwargs(function: Callable[..., Any], settings: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The recorded settings as keyword arguments of `function` (enum names resolved); the keys it cannot take."""
    import onnxruntime.quantization as q

    accepted = set(inspect.signature(function).parameters)
    kwargs: dict[str, Any] = {}
    ignored = []
    for key, value in settings.items():
        if key in _OWN_SETTINGS:
            continue
        if key not in accepted or key in ("model_input", "model_output", "calibration_data_reader"):
            ignored.append(key)
            continue
        if key in _ENUMS:
            enum = getattr(q, _ENUMS[key])
            member = str(value).rsplit(".", 1)[-1]
            if member not in enum.__members__:
                raise BundleError(f"transform.settings.{key}: '{value}' is not one of {', '.join(enum.__members__)}")
            value = enum[member]
        kwargs[key] = value
    return kwargs, ignored


def calibration_cases(cases: Sequence[Case], declared: Any) -> list[Case]:
    """All cases, the first N (`calibration_cases: N`), or the named ones (`calibration_cases: [a, b]`)."""
    if isinstance(declared, int) and not isinstance(declared, bool) and declared > 0:
        return list(cases[:declared])
    if isinstance(declared, list):
        wanted = {str(n) for n in declared}
        chosen = [c for c in cases if c.name in wanted]
        if len(chosen) != len(wanted):
            missing = sorted(wanted - {c.name for c in chosen})
            raise BundleError(f"transform.settings.calibration_cases names no case {', '.join(missing)}")
        return chosen
    return list(cases)


def calibration_reader(cases: Sequence[Case]) -> Any:
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items: Iterator[Case] = iter(cases)

        def get_next(self) -> dict[str, np.ndarray] | None:
            case = next(self._items, None)
            return None if case is None else {k: np.asarray(v) for k, v in case.inputs.items()}

    return Reader()


def requantize_to(
    transform: Transform, cases: Sequence[Case], baseline: Path, out: Path, changed: Mapping[str, Any]
) -> None:
    """The recorded transform run again on `baseline` into `out`, with the settings in `changed` set over the
    recorded ones (e.g. reduce_range=True); BundleError says why it could not be."""
    function = quantizer(transform.tool)
    settings = {**transform.settings, **changed}
    kwargs, _ = quant_kwargs(function, settings)
    calibration = calibration_cases(cases, settings.get("calibration_cases"))
    reader = {"calibration_data_reader": calibration_reader(calibration)} if "static" in function.__name__ else {}
    logging.disable(logging.WARNING)  # its advice to pre-process goes to the root logger, i.e. onto the report
    try:
        function(str(baseline), str(out), **reader, **kwargs)
    except Exception as exc:  # onnxruntime.quantization raises bare exceptions of many kinds
        raise BundleError(f"{function.__name__} failed: {exc}") from exc
    finally:
        logging.disable(logging.NOTSET)
