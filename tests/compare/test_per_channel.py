"""Per-channel against per-tensor, proven from the graph for every format onnxruntime.quantization writes.

The graphs are real: quantize_static in QDQ and in operator format (QLinearConv, QGemm), quantize_dynamic
(ConvInteger, MatMulInteger), each per channel and per tensor, and a QDQ graph whose quantized weights an
exporter moved into Constant nodes. A declaration that says the other granularity gets its `variant.transform`
warning; the true one gets none.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from modelkit import classifier, images, run
from onnx import helper

from checker import findings as F
from checker.compare.transform import contradictions, quantized_weights, read_facts, transform_findings
from checker.manifest.model.build import build
from checker.manifest.model.variants import Transform
from checker.release.traces import shown_transform

STATIC = "onnxruntime.quantization.quantize_static"
DYNAMIC = "onnxruntime.quantization.quantize_dynamic"


def _static(src: Path, dest: Path, fmt: str, per_channel: bool) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items: Iterator[np.ndarray] = iter(images(4))

        def get_next(self) -> dict[str, np.ndarray] | None:
            item = next(self._items, None)
            return None if item is None else {"pixels": item}

    quantize_static(
        str(src),
        str(dest),
        Reader(),
        quant_format=QuantFormat.QDQ if fmt == "QDQ" else QuantFormat.QOperator,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=per_channel,
    )


def _dynamic(src: Path, dest: Path, per_channel: bool) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dest), weight_type=QuantType.QInt8, per_channel=per_channel)


def _in_constants(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same graph with every initializer given by a Constant node instead, as some exporters write it."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    constants = [helper.make_node("Constant", [], [t.name], value=t) for t in out.graph.initializer]
    nodes = list(out.graph.node)
    del out.graph.initializer[:]
    del out.graph.node[:]
    out.graph.node.extend([*constants, *nodes])
    return out


FORMS = ("QDQ", "QOperator", "dynamic", "QDQ in Constant nodes")


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], onnx.ModelProto]:
    root = tmp_path_factory.mktemp("per_channel")
    onnx.save(classifier(), str(root / "f.onnx"))
    out = {}
    for per_channel in (True, False):
        for form in ("QDQ", "QOperator"):
            _static(root / "f.onnx", root / f"{form}{per_channel}.onnx", form, per_channel)
            out[form, per_channel] = onnx.load(str(root / f"{form}{per_channel}.onnx"))
        _dynamic(root / "f.onnx", root / f"dyn{per_channel}.onnx", per_channel)
        out["dynamic", per_channel] = onnx.load(str(root / f"dyn{per_channel}.onnx"))
        out["QDQ in Constant nodes", per_channel] = _in_constants(out["QDQ", per_channel])
    return out


def _transform(form: str, per_channel: bool) -> Transform:
    return build(Transform, _declared(form, per_channel))


def _declared(form: str, per_channel: bool) -> dict[str, object]:
    if form == "dynamic":
        return {"tool": DYNAMIC, "version": "1.19", "settings": {"per_channel": per_channel, "weight_type": "QInt8"}}
    fmt = "QOperator" if form == "QOperator" else "QDQ"
    settings = {"quant_format": fmt, "per_channel": per_channel, "activation_type": "QUInt8", "weight_type": "QInt8"}
    return {
        "tool": STATIC,
        "version": "1.19",
        "settings": {**settings, "calibrate_method": "MinMax", "calibration_cases": ["a"]},
    }


@pytest.mark.parametrize("form", FORMS)
def test_each_format_shows_its_granularity(graphs: dict[tuple[str, bool], onnx.ModelProto], form: str) -> None:
    per_channel, per_tensor = graphs[form, True], graphs[form, False]
    assert quantized_weights(per_channel) and quantized_weights(per_tensor)
    assert read_facts(per_channel).per_channel and not read_facts(per_tensor).per_channel
    assert read_facts(per_tensor).per_tensor
    assert read_facts(per_tensor).weight_types == {onnx.TensorProto.INT8}
    # `checker variant add` reads the same weights: what it records is what the check proves
    assert shown_transform(per_channel).settings.get("per_channel") is True
    assert "per_channel" not in shown_transform(per_tensor).settings


@pytest.mark.parametrize("form", FORMS)
def test_a_per_tensor_graph_declared_per_channel_is_named(
    graphs: dict[tuple[str, bool], onnx.ModelProto], form: str
) -> None:
    where = {"file": "bundle.yaml", "line": 3}
    found = transform_findings("int8", _transform(form, True), graphs[form, False], where)
    said = [f.message for f in found if f.severity is F.Severity.WARNING]
    assert any("per_channel is true, but every quantized weight has a single scale" in m for m in said), said
    wrong = transform_findings("int8", _transform(form, False), graphs[form, True], where)
    flagged = "per_channel is false, but some quantized weights have one scale per channel"
    assert any(flagged in f.message for f in wrong)
    for per_channel in (True, False):  # the truth draws no contradiction
        truthful = transform_findings("int8", _transform(form, per_channel), graphs[form, per_channel], where)
        assert [f.message for f in truthful] == []


def test_the_constant_held_graph_is_one_onnxruntime_runs(graphs: dict[tuple[str, bool], onnx.ModelProto]) -> None:
    pixels = images(1)[0]
    held = run(graphs["QDQ in Constant nodes", False], {"pixels": pixels})["logits"]
    np.testing.assert_array_equal(held, run(graphs["QDQ", False], {"pixels": pixels})["logits"])
    assert not graphs["QDQ in Constant nodes", False].graph.initializer


def test_a_declared_weight_type_is_held_to_every_format(graphs: dict[tuple[str, bool], onnx.ModelProto]) -> None:
    for form in ("QOperator", "dynamic"):
        declared = _declared(form, False)
        settings = {**declared["settings"], "weight_type": "QUInt8"}  # type: ignore[dict-item]
        transform = build(Transform, {**declared, "settings": settings})
        found = list(contradictions(transform, read_facts(graphs[form, False])))
        assert any("weight_type is QUInt8, but the graph's weights are QInt8" in text for text in found), found
