"""The diagnosis: intermediate tensors matched across a rewrite, scored by SQNR, in bounded groups."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from modelkit import classifier, images, quantize
from onnx import TensorProto, helper, numpy_helper

from checker.compare import divergence as D
from checker.compare.matching import GRAPH_INPUT, match_tensors
from checker.compare.metrics import SQNR_CAP_DB
from checker.compare.session import Runtime

CPU = Runtime(["CPUExecutionProvider"], {})


def graphs(baseline: onnx.ModelProto, variant: onnx.ModelProto, folder: Path = Path()) -> D.Graphs:
    return D.Graphs(baseline, folder, variant, folder)


def test_names_the_deliberately_perturbed_node() -> None:
    base, perturbed = classifier(), classifier(perturb="conv2")
    x = images(1, seed=3)[0]
    result = D.diagnose(graphs(base, perturbed), "perturbed", "c", {"pixels": x}, CPU)
    by_tensor = {s.produced.tensor: s for s in result.scored}
    assert by_tensor["conv1_out"].sqnr_db == SQNR_CAP_DB  # untouched before the perturbed node
    assert by_tensor["relu1_out"].sqnr_db == SQNR_CAP_DB
    assert result.first is not None
    assert result.first.produced.tensor == "conv2_out"
    assert result.first.produced.node == "conv2"
    assert result.nodes_to_exclude() == ["conv2"]
    assert "the first tensor below 30 dB is 'conv2_out' (node 'conv2', Conv)" in result.summary()
    assert result.unmatched == []


def test_a_perturbed_last_node_is_found_too() -> None:
    base, perturbed = classifier(), classifier(perturb="fc")
    result = D.diagnose(graphs(base, perturbed), "p", "c", {"pixels": images(1)[0]}, CPU)
    assert result.first is not None and result.first.produced.node == "fc"
    assert result.worst is not None and result.worst.produced.tensor == "logits"


def test_identical_graphs_have_no_divergence() -> None:
    base = classifier()
    result = D.diagnose(graphs(base, classifier()), "same", "c", {"pixels": images(1)[0]}, CPU)
    assert result.first is None
    assert result.nodes_to_exclude() == []
    assert "stays above 30 dB" in result.summary()


def test_bounded_groups_give_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    base, perturbed = classifier(), classifier(perturb="conv2")
    x = {"pixels": images(1, seed=3)[0]}
    whole = D.diagnose(graphs(base, perturbed), "p", "c", x, CPU)
    monkeypatch.setattr(D, "BUDGET_BYTES", 1)  # every tensor in a group of its own
    split = D.diagnose(graphs(base, perturbed), "p", "c", x, CPU)
    assert whole.groups == 1
    assert split.groups == len(split.scored) == len(whole.scored)
    assert [s.sqnr_db for s in split.scored] == [s.sqnr_db for s in whole.scored]
    assert base == classifier()  # exposing tensors leaves the loaded graph as it was


@pytest.fixture(scope="module")
def bad_int8(tmp_path_factory: pytest.TempPathFactory) -> onnx.ModelProto:
    root = tmp_path_factory.mktemp("bad")
    onnx.save(classifier(), str(root / "float.onnx"))
    return onnx.load(str(quantize(root / "float.onnx", root / "bad.onnx", images(16, seed=9, scale=100.0))))


def test_qdq_matching_follows_the_rewrite(bad_int8: onnx.ModelProto) -> None:
    matched, unmatched = match_tensors(classifier(), bad_int8)
    twins = {p.tensor: p.variant_tensor for p in matched}
    assert twins["pixels"] == "pixels_DequantizeLinear_Output"
    assert twins["relu1_out"] == "relu1_out_DequantizeLinear_Output"
    assert twins["logits"] == "logits"  # a graph output keeps its name after the DequantizeLinear
    # The quantizer fused Conv and Relu: conv1_out is gone, and conv1 belongs to relu1_out's region.
    assert "conv1_out" in unmatched
    relu1 = next(p for p in matched if p.tensor == "relu1_out")
    assert relu1.exclude == ("conv1", "relu1")
    assert relu1.inputs == ("pixels",)
    pixels = next(p for p in matched if p.tensor == "pixels")
    assert pixels.op_type == GRAPH_INPUT and pixels.exclude == ("conv1",)


def test_badly_calibrated_input_is_the_first_divergence(bad_int8: onnx.ModelProto) -> None:
    result = D.diagnose(graphs(classifier(), bad_int8), "int8", "c", {"pixels": images(1, seed=4)[0]}, CPU)
    assert result.first is not None
    assert result.first.produced.tensor == "pixels"
    assert result.first.sqnr_db < 10
    assert result.nodes_to_exclude()[0] == "conv1"
    report = result.to_dict(full=True)
    json.dumps(report, allow_nan=False)
    assert report["first"]["variant_tensor"] == "pixels_DequantizeLinear_Output"
    assert len(report["tensors"]) == report["compared"]


def chain(length: int, width: int) -> onnx.ModelProto:
    """A long chain of named Add nodes over a wide tensor: many large intermediate tensors."""
    nodes = [helper.make_node("Add", [f"t{i}", "one"], [f"t{i + 1}"], name=f"add{i}") for i in range(length)]
    one = numpy_helper.from_array(np.ones(width, np.float32), "one")
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info(f"t{length}", TensorProto.FLOAT, [1, width])],
        [one],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_many_tensors_are_processed_in_bounded_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    length, width = 120, 1 << 14  # 64 KiB per tensor, 7.5 MiB in all
    base, variant = chain(length, width), chain(length, width)
    variant.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.full(width, 1.001, np.float32), "one"))
    monkeypatch.setattr(D, "BUDGET_BYTES", 1 << 20)  # 16 tensors per group
    sizes = D.tensor_sizes(base, {"t0": np.zeros((1, width), np.float32)})
    assert sizes["t5"] == (TensorProto.FLOAT, 4 * width)
    result = D.diagnose(graphs(base, variant), "v", "c", {"t0": np.zeros((1, width), np.float32)}, CPU)
    assert result.groups == length // 16 + (1 if length % 16 else 0)
    assert len(result.scored) == length
    assert [s.produced.tensor for s in result.scored[:2]] == ["t1", "t2"]


def test_external_data_is_read_from_the_graphs_folder(tmp_path: Path) -> None:
    base = classifier()
    onnx.save(
        base, str(tmp_path / "model.onnx"), save_as_external_data=True, location="model.onnx.data", size_threshold=0
    )
    loaded = onnx.load(str(tmp_path / "model.onnx"), load_external_data=False)
    assert any(t.data_location == TensorProto.EXTERNAL for t in loaded.graph.initializer)
    result = D.diagnose(graphs(loaded, classifier(perturb="conv2"), tmp_path), "p", "c", {"pixels": images(1)[0]}, CPU)
    assert result.first is not None and result.first.produced.node == "conv2"


def test_a_graph_that_cannot_run_is_a_diagnosis_error() -> None:
    base = classifier()
    broken = classifier()
    broken.graph.node[2].op_type = "NoSuchOp"
    with pytest.raises(D.DiagnosisError):
        D.diagnose(graphs(base, broken), "v", "c", {"pixels": images(1)[0]}, CPU)
    with pytest.raises(D.DiagnosisError, match="every input"):
        D.diagnose(graphs(base, classifier()), "v", "c", {"other": images(1)[0]}, CPU)


def test_unnamed_nodes_cannot_be_excluded_by_name() -> None:
    base, perturbed = classifier(), classifier(perturb="conv2")
    for model in (base, perturbed):
        for node in model.graph.node:
            node.name = ""
    result = D.diagnose(graphs(base, perturbed), "p", "c", {"pixels": images(1)[0]}, CPU)
    assert result.nodes_to_exclude() == []
    assert "have no name and cannot be excluded by name" in result.summary()
