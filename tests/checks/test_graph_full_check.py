"""The ONNX checker with full_check: strict shape-inference errors are graph.invalid warnings."""

from __future__ import annotations

from pathlib import Path

from bundlekit import linear_model, manifest, write_bundle
from onnx import TensorProto, helper

from checker import findings as F
from checker.context import Options
from checker.verify import verify_bundle


def test_a_shape_inference_error_is_a_graph_invalid_warning(tmp_path: Path) -> None:
    model = linear_model()
    # A value_info that contradicts what inference derives: the plain checker accepts it, full_check does not.
    model.graph.value_info.append(helper.make_tensor_value_info("xw", TensorProto.FLOAT, ["batch", 7]))
    root = write_bundle(tmp_path / "b", model, manifest())
    report = verify_bundle(root, Options())
    found = [f for f in report.findings if f.id == F.GRAPH_INVALID]
    assert [f.severity for f in found] == [F.Severity.WARNING], found
    assert "strict shape inference" in found[0].message and "ShapeInferenceError" in found[0].message
    assert found[0].line is not None and report.status() == "pass"


def test_a_sound_graph_has_no_shape_inference_warning(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", linear_model(), manifest())
    report = verify_bundle(root, Options())
    assert not [f for f in report.findings if f.id == F.GRAPH_INVALID]
