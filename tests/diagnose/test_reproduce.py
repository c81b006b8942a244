"""`checker diagnose --reproduce`: the recorded transform re-run on the shipped example, and with one setting
changed, the first differing tensor named; settings that leave out what decides the result are a warning."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from bundlekit import EXAMPLE

from checker import findings as F
from checker.cli import main
from checker.compare.transform import transform_findings
from checker.diagnose.reproduce import _describe, kind


def diagnose(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, dict[str, Any]]:
    code = main(["diagnose", str(root), "--reproduce", "int8", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def with_settings(tmp_path: Path, **changed: Any) -> Path:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    manifest = root / "bundle.yaml"
    data = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    data["variants"][0]["transform"]["settings"].update(changed)
    manifest.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return root


def test_the_shipped_example_is_reproduced(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = diagnose(capsys, EXAMPLE)
    assert code == 0 and out["reproduced"] is True
    assert out["tensors_compared"] >= 20 and "difference" not in out
    assert out["calibration_cases"][:2] == ["meadow", "harbour"] and len(out["calibration_cases"]) == 8
    assert "equals variant 'int8'" in out["summary"]


def test_one_setting_changed_names_the_first_differing_tensor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = diagnose(capsys, with_settings(tmp_path, per_channel=False))
    assert code == 1 and out["reproduced"] is False
    assert out["difference"]["tensor"] == "conv1.w_zero_point" and out["difference"]["kind"] == "zero point"
    assert out["difference"]["text"] == "shape [8] against []"  # one zero point per channel, shipped
    assert "first at zero point 'conv1.w_zero_point'" in out["summary"]


def test_a_changed_value_is_named_with_its_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = diagnose(capsys, with_settings(tmp_path, calibration_cases=["dusk"]))
    assert code == 1
    difference = out["difference"]
    assert difference["kind"] in ("scale", "zero point") and difference["max_abs_difference"] > 0
    assert difference["tensor"].endswith(("_scale", "_zero_point"))
    assert difference["differing_elements"] >= 1 and "differ, by up to" in difference["text"]


def test_the_text_form_and_a_missing_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(EXAMPLE), "--reproduce", "int8"]) == 0
    assert capsys.readouterr().out.startswith("re-ran quantize_static")
    assert main(["diagnose", str(EXAMPLE), "--reproduce", "fp16"]) == 2
    assert "no variant 'fp16'" in capsys.readouterr().err


def test_settings_without_what_decides_the_result_are_a_warning() -> None:
    transform = {
        "tool": "onnxruntime.quantization.quantize_static",
        "version": "1.32.0",
        "settings": {"per_channel": True},
    }
    (found,) = transform_findings("int8", transform, None, {"file": "bundle.yaml", "line": 3})
    assert found.id == F.VARIANT_TRANSFORM and found.severity is F.Severity.WARNING
    assert "leave out calibration_cases, calibrate_method" in found.message
    complete = {**transform, "settings": {"calibration_cases": 8, "calibrate_method": "MinMax"}}
    assert transform_findings("int8", complete, None, {"file": None, "line": None}) == []


def test_the_warning_says_what_calibration_cases_takes() -> None:
    """Both forms the message names are the ones the transform check (and the re-run) accepts."""
    transform = {"tool": "onnxruntime.quantization.quantize_static", "version": "1.32.0", "settings": {"x": 1}}
    (found,) = transform_findings("int8", transform, None, {"file": None, "line": None})
    assert "calibration_cases takes the cases calibrated on: a count of the bundle's first cases" in found.message
    assert "(calibration_cases: 8) or their names (calibration_cases: [meadow, dusk])" in found.message
    assert "calibrate_method takes onnxruntime's CalibrationMethod name (MinMax" in found.message
    for given in (8, ["meadow", "dusk"]):
        settings = {"calibration_cases": given, "calibrate_method": "MinMax"}
        assert transform_findings("int8", {**transform, "settings": settings}, None, {"file": None, "line": None}) == []


def test_tensor_kinds_and_equal_arrays() -> None:
    assert [kind(n) for n in ("fc.w_scale", "fc.w_zero_point", "fc.w_quantized")] == ["scale", "zero point", "weight"]
    assert _describe(np.ones(3, np.int8), np.ones(3, np.int8)) is None
    assert _describe(np.ones(3, np.int8), np.ones(3, np.uint8))["text"] == "dtype int8 against uint8"
