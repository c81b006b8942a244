"""Sequence outputs: a real CTC-style graph returning [T, N, C], judged per item along N, with its shapes named.

The graph is built with onnx.helper and run by onnxruntime: features [N, T, F] -> MatMul -> [N, T, C] ->
Transpose -> logits [T, N, C], as a CTC recogniser exported from PyTorch returns them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import onnx
import pytest
from modelkit import case, make_context, manifest, run, variant_entry
from onnx import TensorProto, helper, numpy_helper

from checker import findings as F
from checker.checks.comparison import compare_stage
from checker.manifest.schema import load

T, N, FEATURES, CLASSES = 8, 2, 6, 5


def recogniser(declared: list[Any] | None = None, seed: int = 0) -> onnx.ModelProto:
    """A real [T, N, C] graph; `declared` is the output shape it claims (onnxruntime does not enforce it)."""
    rng = np.random.default_rng(seed)
    weight = numpy_helper.from_array(rng.normal(0, 1, (FEATURES, CLASSES)).astype(np.float32), "w")
    nodes = [
        helper.make_node("MatMul", ["features", "w"], ["scores"]),
        helper.make_node("Transpose", ["scores"], ["logits"], perm=[1, 0, 2]),
    ]
    features = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", "T", FEATURES])
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, declared or ["T", "N", CLASSES])
    graph = helper.make_graph(nodes, "ctc", [features], [logits], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def features(seed: int) -> np.ndarray:
    """Item 0 is loud, item 1 quiet: read along time, item 0 drowns whatever item 1 does."""
    x = np.random.default_rng(seed).normal(0, 1, (N, T, FEATURES)).astype(np.float32)
    x[0] *= 1000.0
    return x


def negate_item_1(out: np.ndarray) -> None:
    out[:, 1, :] *= -1.0


def reverse_item_1_at_step_3(out: np.ndarray) -> None:
    out[3, 1, :] = out[3, 1, ::-1].copy()


def ctc_cases(model: onnx.ModelProto, spoil: Any = negate_item_1, count: int = 3) -> tuple[list[Any], list[np.ndarray]]:
    """Cases whose expected item 1 is what a broken reference gave (`spoil` says how it is broken)."""
    cases, actual = [], []
    for i in range(count):
        x = features(10 + i)
        out = run(model, {"features": x})["logits"]
        expected = out.copy()
        spoil(expected)
        cases.append(case(f"utt-{i}", {"features": x}, {"logits": expected}, i))
        actual.append(out)
    return cases, actual


def judge(tmp_path: Path, rules: list[dict[str, Any]], spoil: Any = negate_item_1) -> Any:
    model = recogniser()
    cases, _ = ctc_cases(model, spoil)
    ctx = make_context(tmp_path, manifest(rules), {"model.onnx": model}, cases)
    found = list(compare_stage(ctx))
    return found, ctx.comparisons[0]


def test_cosine_along_the_batch_axis_sees_the_broken_item(tmp_path: Path) -> None:
    _, by_time = judge(tmp_path, [{"output": "logits", "check": "cosine", "min": 0.999}])
    assert by_time.status == "pass"  # axis 0 is time: every row mixes the loud item with the quiet one
    assert by_time.rules[0].measured > 0.999
    found, by_item = judge(tmp_path, [{"output": "logits", "check": "cosine", "min": 0.999, "batch_axis": 1}])
    assert by_item.status == "fail"
    assert by_item.rules[0].measured == pytest.approx(-1.0)
    assert by_item.rules[0].params["batch_axis"] == 1
    assert any(f.id == F.COMPARISON_RULE and "cosine similarity of -1" in f.message for f in found)


def test_topk_counts_items_along_the_batch_axis(tmp_path: Path) -> None:
    rule = {"output": "logits", "check": "topk", "k": 1, "min_agreement": 0.0}
    _, rows = judge(tmp_path, [rule], reverse_item_1_at_step_3)
    _, items = judge(tmp_path, [{**rule, "batch_axis": 1}], reverse_item_1_at_step_3)
    model = recogniser()
    cases, actual = ctc_cases(model, reverse_item_1_at_step_3)
    first = cases[0].expected["logits"]
    # Without batch_axis every (t, n) row is an item; with it an utterance agrees only when all its steps do.
    per_row = float(np.mean(first.argmax(-1) == actual[0].argmax(-1)))
    assert rows.rules[0].cases["utt-0"] == pytest.approx(per_row)
    assert items.rules[0].cases["utt-0"] == pytest.approx(0.5)  # item 0 agrees, item 1 does not
    assert per_row == pytest.approx((T * N - 1) / (T * N))


def test_batch_axis_must_exist_and_differ_from_the_class_axis(tmp_path: Path) -> None:
    _, outside = judge(tmp_path, [{"output": "logits", "check": "cosine", "batch_axis": 3}])
    assert "batch_axis 3 does not exist in shape [8, 2, 5]" in (outside.rules[0].note or "")
    _, same = judge(tmp_path, [{"output": "logits", "check": "topk", "axis": -1, "batch_axis": 2}])
    assert "batch_axis 2 is the class axis -1" in (same.rules[0].note or "")


def test_schema_takes_batch_axis_on_per_item_checks_only() -> None:
    schema = load("manifest")
    rules = schema["properties"]["comparison"]["properties"]["rules"]
    for check in ("cosine", "topk", "score_drift"):
        extra = {"max": 0.1} if check == "score_drift" else {}
        jsonschema.validate([{"output": "y", "check": check, "batch_axis": 1, **extra}], rules)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"output": "y", "check": "allclose", "batch_axis": 1}], rules)


# ----- shapes onnxruntime returns, and what a comparison with case errors is called


def ctc_bundle(root: Path, declared_graph: list[Any], declared_manifest: list[Any], variant: bool = False) -> Path:
    """A bundle on disk around the recogniser; the expected outputs are the graph's own."""
    root.mkdir(parents=True, exist_ok=True)
    model = recogniser(declared_graph)
    onnx.save(model, str(root / "model.onnx"))
    (root / "labels.txt").write_text("".join(f"c{i}\n" for i in range(CLASSES)))
    entries = []
    for i in range(2):
        x = features(20 + i)
        folder = root / "cases" / f"utt-{i}"
        folder.mkdir(parents=True)
        np.save(folder / "features.npy", x)
        np.save(folder / "logits.npy", run(model, {"features": x})["logits"])
        entries.append(
            {
                "name": f"utt-{i}",
                "tags": ["edge"],
                "inputs": {"features": f"cases/utt-{i}/features.npy"},
                "expected": {"logits": f"cases/utt-{i}/logits.npy"},
            }
        )
    rules = [{"output": "logits", "check": "cosine", "batch_axis": 1}]
    data: dict[str, Any] = {
        "manifest_version": 1,
        "release": {"name": "ctc", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {
                "name": "features",
                "dtype": "float32",
                "shape": ["N", "T", FEATURES],
                "meaning": "audio",
                "preprocessing": {"kind": "custom", "description": "seeded noise features"},
            }
        ],
        "outputs": [
            {
                "name": "logits",
                "dtype": "float32",
                "shape": declared_manifest,
                "meaning": "logits",
                "labels": {"path": "labels.txt"},
            }
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {"reference": {"description": "the graph itself"}, "cases": entries, "rules": rules},
    }
    if variant:
        onnx.save(model, str(root / "same.onnx"))
        data["variants"] = [variant_entry("same", "same.onnx", rules)]
    (root / "bundle.json").write_text(json.dumps(data, indent=2))
    return root


Cli = Any


def test_a_returned_shape_is_named_beside_both_declarations(cli: Cli, tmp_path: Path) -> None:
    bundle = ctc_bundle(tmp_path / "b", [1, "seqlen"], ["T", "N", CLASSES])
    _, out, _ = cli("verify", bundle, "--format", "json")
    findings = json.loads(out)["bundles"][0]["findings"]
    shape = [f for f in findings if f["id"] == F.GRAPH_IO and "onnxruntime returned" in f["message"]]
    assert len(shape) == 1
    message = shape[0]["message"]
    assert f"with shape [{T}, {N}, {CLASSES}]" in message
    assert "the graph declares [1, seqlen]" in message
    assert f"the manifest declares [T, N, {CLASSES}]" in message
    assert shape[0]["line"] is not None


def test_shapes_that_agree_give_no_finding(cli: Cli, tmp_path: Path) -> None:
    bundle = ctc_bundle(tmp_path / "b", ["T", "N", CLASSES], ["T", "N", CLASSES])
    _, out, _ = cli("verify", bundle, "--format", "json")
    report = json.loads(out)
    assert not [f for f in report["bundles"][0]["findings"] if "onnxruntime returned" in f["message"]]
    assert report["bundles"][0]["comparisons"][0]["status"] == "pass"


def test_case_errors_keep_the_comparison_from_passing(cli: Cli, tmp_path: Path) -> None:
    # The graph and the manifest both claim rank 2: every stored [T, N, C] file is a comparison.case error,
    # while the rules themselves pass (the stored outputs are the graph's own).
    bundle = ctc_bundle(tmp_path / "b", [1, "seqlen"], [1, "seqlen"], variant=True)
    _, out, _ = cli("verify", bundle, "--format", "json")
    report = json.loads(out)
    jsonschema.validate(report, load("report"))
    baseline = report["bundles"][0]["comparisons"][0]
    assert all(r["passed"] for r in baseline["rules"])
    assert baseline["status"] == "fail"
    assert baseline["case_errors"] == ["utt-0", "utt-1"]
    _, text, _ = cli("verify", bundle, "--format", "text")
    line = next(x for x in text.splitlines() if "baseline vs reference" in x)
    assert ": pass" not in line and "2 case(s) have comparison.case errors" in line
    _, markdown, _ = cli("verify", bundle, "--format", "markdown")
    head = next(x for x in markdown.splitlines() if x.startswith("####") and "baseline" in x)
    assert "passed" not in head and "failed" in head
    assert "2 case(s) have comparison.case errors" in markdown


def test_a_variant_whose_graph_runs_is_judged(cli: Cli, tmp_path: Path) -> None:
    # The manifest's output rank disagrees with both graphs (graph.io); the variant still runs, so it is judged.
    bundle = ctc_bundle(tmp_path / "b", ["T", "N", CLASSES], ["T", "N", CLASSES], variant=True)
    data = json.loads((bundle / "bundle.json").read_text())
    variant = recogniser([1, "seqlen"])
    onnx.save(variant, str(bundle / "same.onnx"))
    (bundle / "bundle.json").write_text(json.dumps(data))
    _, out, _ = cli("verify", bundle, "--format", "json")
    report = json.loads(out)["bundles"][0]
    messages = [f["message"] for f in report["findings"]]
    assert not any("not usable" in m for m in messages)
    assert any(m.startswith("variant 'same': onnxruntime returned output 'logits'") for m in messages)
    judged = [c for c in report["comparisons"] if c["graph"] == "same"]
    assert [c["status"] for c in judged] == ["pass"]
