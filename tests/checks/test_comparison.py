"""The comparison stage on real graphs and real onnxruntime sessions: baseline first, then variants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from modelkit import (
    case,
    classifier,
    classifier_cases,
    images,
    make_context,
    manifest,
    quantize,
    run,
    variant_entry,
)
from onnx import TensorProto, helper

from checker import findings as F
from checker.checks.comparison import compare_stage
from checker.checks.runtime import runtime_stage
from checker.context import Options
from checker.reports.model import Comparison

BACKEND = Path(onnx.__file__).parent / "backend/test/data/pytorch-converted"
LOOSE = [
    {"output": "logits", "check": "topk", "k": 1},
    {"output": "logits", "check": "score_drift", "max": 0.05, "apply": "softmax"},
]


def stage(ctx: Any) -> tuple[list[F.Finding], list[Comparison]]:
    found = list(compare_stage(ctx))
    return found, ctx.comparisons


def ids(found: list[F.Finding], severity: F.Severity | None = None) -> list[str]:
    return [f.id for f in found if severity is None or f.severity is severity]


def backend_case(folder: Path) -> tuple[onnx.ModelProto, Any]:
    model = onnx.load(str(folder / "model.onnx"))
    tensors: dict[str, dict[str, np.ndarray]] = {"input": {}, "output": {}}
    for side, values in (("input", model.graph.input), ("output", model.graph.output)):
        inits = {i.name for i in model.graph.initializer}
        names = [v.name for v in values if v.name not in inits]
        for i, name in enumerate(names):
            proto = onnx.TensorProto()
            proto.ParseFromString((folder / "test_data_set_0" / f"{side}_{i}.pb").read_bytes())
            tensors[side][name] = onnx.numpy_helper.to_array(proto)
    return model, case(folder.name, tensors["input"], tensors["output"])


@pytest.mark.parametrize(
    "name",
    [
        "test_Conv2d",
        "test_Embedding",
        "test_MaxPool2d_stride_padding_dilation",
        "test_PixelShuffle",
        "test_softmax_lastdim",
    ],
)
def test_backend_test_data_reproduces(tmp_path: Path, name: str) -> None:
    model, the_case = backend_case(BACKEND / name)
    out = model.graph.output[0].name
    rules = [{"output": out, "check": "allclose", "atol": 1e-5, "rtol": 1e-3}, {"output": out, "check": "cosine"}]
    ctx = make_context(tmp_path, manifest(rules), {"model.onnx": model}, [the_case])
    found, comparisons = stage(ctx)
    assert ids(found, F.Severity.ERROR) == []
    assert [c.status for c in comparisons] == ["pass"]
    assert comparisons[0].rules[0].measured is not None
    assert comparisons[0].rules[0].measured <= 1e-5


def test_backend_test_data_perturbed_fails_with_the_rule_line(tmp_path: Path) -> None:
    model, the_case = backend_case(BACKEND / "test_Conv2d")
    out = model.graph.output[0].name
    the_case.expected[out] = the_case.expected[out] + np.float32(0.01)
    rules = [{"output": out, "check": "allclose", "atol": 1e-5, "rtol": 0.0}]
    variants = [variant_entry("copy", "model.onnx", rules)]
    ctx = make_context(tmp_path, manifest(rules, variants), {"model.onnx": model}, [the_case])
    found, comparisons = stage(ctx)
    rule_findings = [f for f in found if f.id == F.COMPARISON_RULE]
    assert len(rule_findings) == 1
    text = rule_findings[0].message
    assert text.startswith(f"baseline: rule {out}/allclose failed: worst case 'test_Conv2d' measured atol 0.01")
    assert "would pass at" not in text  # a failure never suggests loosening the rule
    assert rule_findings[0].file == "bundle.json"
    assert rule_findings[0].line == ctx.manifest.line("comparison", "rules", 0)
    assert rule_findings[0].line is not None
    # The baseline failed: the variant is not judged.
    assert F.VARIANT_NOT_ASSESSED in ids(found)
    assert [c.status for c in comparisons] == ["fail", "not_assessed"]
    json.dumps([c.to_dict() for c in comparisons], allow_nan=False)


def test_ragged_cases_run_on_one_session(tmp_path: Path) -> None:
    model = classifier(spatial="size")
    cases = classifier_cases(model, count=3, sizes=(12, 16, 24))
    assert {c.inputs["pixels"].shape for c in cases} == {(1, 3, 12, 12), (1, 3, 16, 16), (1, 3, 24, 24)}
    ctx = make_context(tmp_path, manifest([{"output": "logits", "check": "allclose"}]), {"model.onnx": model}, cases)
    found, comparisons = stage(ctx)
    assert ids(found) == []
    assert comparisons[0].status == "pass"
    assert set(comparisons[0].rules[0].cases) == {"img-0", "img-1", "img-2"}


def test_unavailable_provider_falls_back_to_cpu(tmp_path: Path) -> None:
    model = classifier()
    runtime = {
        "execution_providers": ["NoSuchExecutionProvider", "CPUExecutionProvider"],
        "session_options": {"graph_optimization_level": "disabled", "intra_op_num_threads": 1},
    }
    ctx = make_context(
        tmp_path,
        manifest([{"output": "logits", "check": "allclose"}], **runtime),
        {"model.onnx": model},
        classifier_cases(model, 2),
    )
    # The runtime stage owns the provider warning; the comparison stage runs on the fallback.
    found, comparisons = stage(ctx)
    found = list(runtime_stage(ctx)) + found
    warnings = [f for f in found if f.id == F.RUNTIME_PROVIDER]
    assert len(warnings) == 1
    assert "NoSuchExecutionProvider is not available here" in warnings[0].message
    assert warnings[0].line == ctx.manifest.line("runtime", "execution_providers", 0)
    assert comparisons[0].status == "pass"


def test_command_line_providers_override_the_manifest(tmp_path: Path) -> None:
    model = classifier()
    ctx = make_context(
        tmp_path,
        manifest([{"output": "logits", "check": "allclose"}]),
        {"model.onnx": model},
        classifier_cases(model, 1),
        Options(providers=["OtherExecutionProvider"]),
    )
    found, _ = stage(ctx)
    found = list(runtime_stage(ctx)) + found
    assert any("OtherExecutionProvider" in f.message for f in found if f.id == F.RUNTIME_PROVIDER)


def test_rule_on_a_missing_output_is_a_schema_error(tmp_path: Path) -> None:
    model = classifier()
    rules = [{"output": "probs", "check": "allclose"}, {"output": "logits", "check": "allclose"}]
    ctx = make_context(tmp_path, manifest(rules), {"model.onnx": model}, classifier_cases(model, 1))
    found, comparisons = stage(ctx)
    schema = [f for f in found if f.id == F.MANIFEST_SCHEMA]
    assert len(schema) == 1
    assert "has no output 'probs' (it has logits)" in schema[0].message
    assert schema[0].line == ctx.manifest.line("comparison", "rules", 0, "output")
    assert comparisons[0].status == "fail"
    assert comparisons[0].rules[0].note is not None
    assert comparisons[0].rules[1].passed


def test_not_run_reasons(tmp_path: Path) -> None:
    model = classifier()
    ctx = make_context(tmp_path, manifest([{"output": "logits", "check": "allclose"}]), {"model.onnx": model}, None)
    found, comparisons = stage(ctx)
    assert [(f.id, f.severity) for f in found] == [(F.COMPARISON_NOT_RUN, F.Severity.ERROR)]
    assert "cases could not be loaded" in found[0].message
    assert comparisons == []
    ctx.cases, ctx.graph = classifier_cases(model, 1), None
    assert "baseline graph is not usable" in next(iter(compare_stage(ctx))).message
    ctx.options.run_comparison = False
    assert next(iter(compare_stage(ctx))).severity is F.Severity.INFO


def test_a_case_the_graph_cannot_run_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    model = classifier()
    cases = classifier_cases(model, 2)
    cases[1].inputs = {"wrong_name": cases[1].inputs["pixels"]}
    ctx = make_context(tmp_path, manifest([{"output": "logits", "check": "allclose"}]), {"model.onnx": model}, cases)
    found, comparisons = stage(ctx)
    runtime = [f for f in found if f.id == F.COMPARISON_RUNTIME]
    assert len(runtime) == 1
    assert "'img-1': the case has no input 'pixels'" in runtime[0].message
    assert comparisons[0].rules[0].pass_rate == 0.5
    assert comparisons[0].rules[0].worst_case == "img-1"


def nan_model() -> onnx.ModelProto:
    node = helper.make_node("Sqrt", ["x"], ["y"], name="sqrt")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_nan_where_the_reference_is_finite(tmp_path: Path) -> None:
    x = np.array([[4.0, -1.0, 9.0]], np.float32)
    cases = [case("negative", {"x": x}, {"y": np.array([[2.0, 0.0, 3.0]], np.float32)})]
    ctx = make_context(
        tmp_path, manifest([{"output": "y", "check": "max_abs", "max": 1.0}]), {"model.onnx": nan_model()}, cases
    )
    found, comparisons = stage(ctx)
    nan = [f for f in found if f.id == F.COMPARISON_NAN]
    assert len(nan) == 1
    assert "output 'y' holds NaN or infinity" in nan[0].message
    assert "'negative'" in nan[0].message
    assert comparisons[0].status == "fail"
    json.dumps(comparisons[0].to_dict(), allow_nan=False)


@pytest.fixture(scope="module")
def quantized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The float classifier, a well calibrated int8 variant and one calibrated on 100x the input range."""
    root = tmp_path_factory.mktemp("quantized")
    model = classifier()
    onnx.save(model, str(root / "float.onnx"))
    good = quantize(root / "float.onnx", root / "good.onnx", images(16, seed=9))
    bad = quantize(root / "float.onnx", root / "bad.onnx", images(16, seed=9, scale=100.0))
    return {
        "model": model,
        "good": onnx.load(str(good)),
        "bad": onnx.load(str(bad)),
        "cases": classifier_cases(model, 12),
    }


def test_quantized_variants_label_agrees_while_score_drifts(tmp_path: Path, quantized: dict[str, Any]) -> None:
    variants = [variant_entry("int8", "int8.onnx", LOOSE), variant_entry("int8-bad", "bad.onnx", LOOSE)]
    models = {"model.onnx": quantized["model"], "int8.onnx": quantized["good"], "bad.onnx": quantized["bad"]}
    ctx = make_context(
        tmp_path, manifest([{"output": "logits", "check": "allclose"}], variants), models, quantized["cases"]
    )
    found, comparisons = stage(ctx)
    by_graph = {c.graph: c for c in comparisons}
    assert by_graph["baseline"].status == "pass"
    assert by_graph["int8"].status == "pass"
    bad = by_graph["int8-bad"]
    topk, drift = bad.rules
    assert topk.passed and topk.pass_rate == 1.0  # every top-1 label agrees ...
    assert not drift.passed  # ... while the top score moved far more than allowed
    assert drift.measured is not None and drift.measured > 0.1
    assert drift.would_pass_at == pytest.approx(drift.measured)
    failed = [f for f in found if f.id == F.COMPARISON_RULE]
    assert len(failed) == 1
    assert failed[0].message.startswith("int8-bad: rule logits/score_drift failed: worst case 'img-")
    assert "the transform introduced the error" in failed[0].message
    assert failed[0].line == ctx.manifest.line("variants", 1, "rules", 1)
    # The failed variant carries a diagnosis of where its tensors leave the baseline's.
    assert bad.diagnosis is not None and bad.diagnosis.compared > 0
    assert bad.diagnosis.case == drift.worst_case
    assert F.VARIANT_DIAGNOSIS in ids(found, F.Severity.INFO)
    assert by_graph["int8"].diagnosis is None
    json.dumps([c.to_dict() for c in comparisons], allow_nan=False)


def test_drift_rules_judge_against_the_baseline(tmp_path: Path, quantized: dict[str, Any]) -> None:
    drift = [{"output": "logits", "check": "max_abs", "max": 1e-4}]
    variants = [variant_entry("int8", "int8.onnx", LOOSE, drift_rules=drift)]
    models = {"model.onnx": quantized["model"], "int8.onnx": quantized["good"]}
    cases = quantized["cases"][:4]
    ctx = make_context(tmp_path, manifest([{"output": "logits", "check": "allclose"}], variants), models, cases)
    found, comparisons = stage(ctx)
    against = [(c.graph, c.against, c.status) for c in comparisons]
    assert against == [("baseline", "reference", "pass"), ("int8", "reference", "pass"), ("int8", "baseline", "fail")]
    message = next(f.message for f in found if f.id == F.COMPARISON_RULE)
    assert message.startswith("int8: rule logits/max_abs failed against the baseline's outputs")
    assert set(ctx.outputs["baseline"]) == {c.name for c in cases}


def test_derived_from_a_failed_variant_is_not_assessed(tmp_path: Path, quantized: dict[str, Any]) -> None:
    variants = [
        variant_entry("int8-bad", "bad.onnx", LOOSE),
        variant_entry("pruned", "int8.onnx", LOOSE, derived_from="int8-bad"),
        variant_entry("orphan", "int8.onnx", LOOSE, derived_from="later"),
    ]
    models = {"model.onnx": quantized["model"], "int8.onnx": quantized["good"], "bad.onnx": quantized["bad"]}
    ctx = make_context(
        tmp_path, manifest([{"output": "logits", "check": "allclose"}], variants), models, quantized["cases"][:2]
    )
    found, comparisons = stage(ctx)
    skipped = [f.message for f in found if f.id == F.VARIANT_NOT_ASSESSED]
    assert "variant 'pruned' was not judged: variant 'int8-bad', which it derives from, failed" in skipped
    assert any("'orphan'" in m and "neither 'baseline' nor an earlier variant" in m for m in skipped)
    assert [c.status for c in comparisons] == ["pass", "fail", "not_assessed", "not_assessed"]


def test_unusable_variant_graph_is_skipped(tmp_path: Path, quantized: dict[str, Any]) -> None:
    variants = [variant_entry("int8", "int8.onnx", LOOSE)]
    models = {"model.onnx": quantized["model"], "int8.onnx": quantized["good"]}
    ctx = make_context(
        tmp_path, manifest([{"output": "logits", "check": "allclose"}], variants), models, quantized["cases"][:1]
    )
    ctx.bad_graphs = {"int8"}
    found, comparisons = stage(ctx)
    skipped = next(f.message for f in found if f.id == F.VARIANT_NOT_ASSESSED)
    assert "its graph could not be parsed or checked" in skipped
    assert comparisons[-1].skipped is not None


def test_graph_onnxruntime_cannot_load(tmp_path: Path) -> None:
    model = classifier()
    model.graph.node[0].op_type = "NoSuchOp"
    ctx = make_context(
        tmp_path,
        manifest([{"output": "logits", "check": "allclose"}]),
        {"model.onnx": model},
        [case("c", {"pixels": images(1)[0]}, {"logits": np.zeros((1, 10), np.float32)})],
    )
    found, comparisons = stage(ctx)
    runtime = [f for f in found if f.id == F.COMPARISON_RUNTIME]
    assert len(runtime) == 1 and "onnxruntime cannot load the graph" in runtime[0].message
    assert comparisons[0].status == "not_assessed"


def test_expected_outputs_from_the_float_run_match(quantized: dict[str, Any]) -> None:
    first = quantized["cases"][0]
    again = run(quantized["model"], first.inputs)
    np.testing.assert_array_equal(again["logits"], first.expected["logits"])


def test_malformed_rules_are_schema_errors_not_crashes(tmp_path: Path) -> None:
    model = classifier()
    rules = [{"output": "logits", "check": "nearly"}, {"output": "logits", "check": "max_abs"}, "allclose"]
    ctx = make_context(tmp_path, manifest(rules), {"model.onnx": model}, classifier_cases(model, 1))
    found, comparisons = stage(ctx)
    schema = [f for f in found if f.id == F.MANIFEST_SCHEMA]
    assert [f.line for f in schema] == [ctx.manifest.line("comparison", "rules", i) for i in range(3)]
    assert "unknown check 'nearly'" in schema[0].message
    assert "needs 'max'" in schema[1].message
    assert [r.passed for r in comparisons[0].rules] == [False, False, False]
    assert comparisons[0].status == "fail"


def test_a_transform_that_left_no_trace_is_an_error(tmp_path: Path) -> None:
    model = classifier()
    variants = [variant_entry("int8", "copy.onnx", LOOSE)]  # declares quantize_static; the graph is float
    ctx = make_context(
        tmp_path,
        manifest([{"output": "logits", "check": "allclose"}], variants),
        {"model.onnx": model, "copy.onnx": classifier()},
        classifier_cases(model, 2),
    )
    found, comparisons = stage(ctx)
    warning = next(f for f in found if f.id == F.VARIANT_TRANSFORM and f.severity is F.Severity.ERROR)
    assert "left no trace in the graph" in warning.message and "MatMulInteger" in warning.message
    assert warning.line == ctx.manifest.line("variants", 0, "transform")
    assert [c.status for c in comparisons] == ["pass", "pass"]
