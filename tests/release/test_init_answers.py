"""`checker init` proposes an `answers:` block where the graph says enough: a YOLO-style detector's output beside
its class names (or Ultralytics' `task: detect`), and a sentence encoder's per-token output beside an
attention_mask; the block it writes matches the schema, with the reason beside it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from releasekit import Cli, ids, verify_json
from ruamel.yaml import YAML

from checker.release.init import init_bundle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "answers"))
from answerkit import detector


def _read(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def encoder() -> onnx.ModelProto:
    """input_ids, attention_mask -> last_hidden_state [batch, seq, 8] (an embedding lookup times the mask)."""
    table = numpy_helper.from_array(np.random.default_rng(0).normal(0, 1, (100, 8)).astype(np.float32), "table")
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["embedded"]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "last"], ["mask3"]),
        helper.make_node("Mul", ["embedded", "mask3"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes,
        "encoder",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
            for n in ("input_ids", "attention_mask")
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", 8])],
        [table, numpy_helper.from_array(np.array([2], np.int64), "last")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_detector_with_ultralytics_metadata_gets_a_detections_answer(tmp_path: Path, cli: Cli) -> None:
    onnx.save(detector(), str(tmp_path / "model.onnx"))
    result = init_bundle(tmp_path / "model.onnx")
    (answer,) = _read(tmp_path / "bundle.yaml")["answers"]
    assert answer == {
        "name": "objects", "kind": "detections", "from": "output0", "steps": [{"transpose": [0, 2, 1]}],
        "decode": {"layout": "yolo", "box_format": "cxcywh", "min_score": 0.25, "nms": {"iou": 0.7},
                   "to_raw": "images"},
        "labels": {"metadata_key": "names"},
    }  # fmt: skip
    assert "# proposed: 'output0' is [batch, 4 + classes, anchors]" in (tmp_path / "bundle.yaml").read_text()
    assert "answers 'objects': detections" in result.guesses
    _code, bundle = verify_json(cli, tmp_path)
    assert "manifest.schema" not in ids(bundle)


def test_a_sentence_encoder_gets_mean_pooling_over_its_mask(tmp_path: Path, cli: Cli) -> None:
    onnx.save(encoder(), str(tmp_path / "model.onnx"))
    init_bundle(tmp_path / "model.onnx")
    (answer,) = _read(tmp_path / "bundle.yaml")["answers"]
    assert answer["kind"] == "embedding" and answer["from"] == "last_hidden_state"
    assert answer["steps"] == [{"pool": {"mode": "mean", "axis": 1, "mask": "attention_mask"}}, {"normalize": "l2"}]
    _code, bundle = verify_json(cli, tmp_path)
    assert "manifest.schema" not in ids(bundle)


def test_a_graph_that_says_nothing_of_its_answer_gets_none(tmp_path: Path) -> None:
    from releasekit import classifier

    onnx.save(classifier(["cat", "dog"]), str(tmp_path / "model.onnx"))
    init_bundle(tmp_path / "model.onnx")
    assert "answers" not in _read(tmp_path / "bundle.yaml")
