"""Hostile graphs and reference outputs: runs that never end, tensors hidden in functions, empty outputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from bundlekit import linear_model, manifest, write_bundle
from hostile import ids, messages
from modelkit import endless_loop
from onnx import TensorProto, helper

from checker.compare.rules import evaluate_case, judge_rule, parse_rule
from checker.compare.session import CaseRunError, run_case
from checker.reports.model import BundleReport


def test_a_graph_that_loops_for_ever_is_stopped(tmp_path: Path) -> None:
    session = ort.InferenceSession(str(endless_loop(tmp_path / "loop.onnx")), providers=["CPUExecutionProvider"])
    with pytest.raises(CaseRunError, match=r"ran for more than 0\.5 s on this case and was stopped"):
        run_case(session, {"x": np.zeros(1, np.float32)}, timeout=0.5)


def test_a_run_within_its_time_is_unchanged(tmp_path: Path) -> None:
    model = linear_model()
    onnx.save(model, str(tmp_path / "m.onnx"))
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    outputs = run_case(session, {"x": np.ones((2, 4), np.float32)}, timeout=30)
    assert outputs["y"].shape == (2, 3)


def test_external_data_inside_a_function_must_be_listed(tmp_path: Path, verify: Callable[..., BundleReport]) -> None:
    # onnxruntime loads a function's constants too; unlisted, their file escaped the digest.
    root = write_bundle(tmp_path / "b", linear_model(), manifest(), external=True)
    (root / "other.data").write_bytes(np.ones(3, np.float32).tobytes())
    model = onnx.load(str(root / "model.onnx"), load_external_data=False)
    constant = TensorProto(name="c", data_type=TensorProto.FLOAT, dims=[3], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "other.data"), ("offset", "0"), ("length", "12")):
        constant.external_data.add(key=key, value=value)
    body = [helper.make_node("Constant", [], ["c"], value=constant), helper.make_node("Add", ["a", "c"], ["b"])]
    model.functions.append(helper.make_function("custom", "Shift", ["a"], ["b"], body, [helper.make_opsetid("", 17)]))
    model.opset_import.append(helper.make_opsetid("custom", 1))
    model.graph.node[-1].output[0] = "pre"
    model.graph.node.append(helper.make_node("Shift", ["pre"], ["y"], domain="custom"))
    onnx.save(model, str(root / "model.onnx"))
    report = verify(root)
    assert any(
        "'other.data', which graph.external_data does not list" in m for m in messages(report, "graph.external_data")
    )
    assert "comparison.not_run" in ids(report)


@pytest.mark.parametrize(
    "raw",
    [
        {"output": "y", "check": "cosine"},
        {"output": "y", "check": "allclose"},
        {"output": "y", "check": "sqnr"},
        {"output": "y", "check": "topk"},
    ],
)
def test_a_rule_that_compared_nothing_does_not_pass(raw: dict[str, object]) -> None:
    # Empty outputs agree vacuously: a set of empty cases made every rule pass without comparing anything.
    rule = parse_rule(raw)
    empty = np.zeros((0, 10), np.float32)
    result = evaluate_case(rule, empty, empty.copy())
    judged = judge_rule(rule, ["a", "b"], {"a": result, "b": result}, None)
    assert not judged.passed and judged.note and "no case gave an element" in judged.note


def test_matching_nan_everywhere_compares_nothing() -> None:
    rule = parse_rule({"output": "y", "check": "max_abs", "max": 0.1})
    nan = np.full((2, 3), np.nan, np.float32)
    judged = judge_rule(rule, ["a"], {"a": evaluate_case(rule, nan, nan.copy())}, None)
    assert not judged.passed


def test_one_empty_case_among_real_ones_still_passes() -> None:
    # A detector's empty scene is a fair case: the rule rests on the others.
    rule = parse_rule({"output": "y", "check": "allclose"})
    full = np.ones((1, 4), np.float32)
    empty = np.zeros((0, 4), np.float32)
    results = {"empty": evaluate_case(rule, empty, empty.copy()), "full": evaluate_case(rule, full, full.copy())}
    assert judge_rule(rule, ["empty", "full"], results, None).passed


def test_score_drift_over_an_empty_axis_is_a_case_failure() -> None:
    rule = parse_rule({"output": "y", "check": "score_drift", "max": 0.1, "axis": 0})
    empty = np.zeros((0, 10), np.float32)
    result = evaluate_case(rule, empty, empty.copy())
    assert result.figure is None and result.note == "axis 0 has no entries to rank"


def test_verify_stops_an_endless_graph_at_the_case_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import yaml
    from bundlekit import manifest

    from checker.cli import main

    root = tmp_path / "endless"
    root.mkdir()
    endless_loop(root / "model.onnx")
    np.save(root / "x.npy", np.zeros(1, np.float32))
    np.save(root / "y.npy", np.ones(1, np.float32))
    data = manifest()
    data["inputs"][0].update(shape=[1])
    data["outputs"][0].update(shape=[1])
    data["comparison"]["cases"] = [
        {"name": "once", "tags": ["edge"], "inputs": {"x": "x.npy"}, "expected": {"y": "y.npy"}}
    ]
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["verify", str(root), "--format", "json", "--case-timeout", "0.5"]) == 1
    findings = json.loads(capsys.readouterr().out)["bundles"][0]["findings"]
    assert any("ran for more than 0.5 s" in f["message"] for f in findings), findings
    assert main(["verify", str(root), "--case-timeout", "0"]) == 2
