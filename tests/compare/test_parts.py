"""Sessions from the runtime section, the transform's consistency with the graph, and the progress bar."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from modelkit import classifier, images, quantize

from checker import findings as F
from checker.compare import progress as P
from checker.compare.session import (
    LEAN_BYTES,
    CaseRunError,
    Runtime,
    SessionError,
    choose_providers,
    open_session,
    resolve_runtime,
    run_case,
    session_options,
    weight_bytes,
)
from checker.compare.transform import contradictions, read_facts, transform_findings
from checker.manifest.model.build import build
from checker.manifest.model.runtime import Runtime as Declared
from checker.manifest.model.variants import Transform
from checker.manifest.schema import validator


def transform(tool: str, settings: dict[str, object]) -> Transform:
    return build(Transform, {"tool": tool, "version": "1", "settings": settings})


def test_session_options_from_the_manifest() -> None:
    so = session_options(
        {
            "graph_optimization_level": "basic",
            "intra_op_num_threads": 1,
            "inter_op_num_threads": 2,
            "execution_mode": "parallel",
        }
    )
    assert so.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert (so.intra_op_num_threads, so.inter_op_num_threads) == (1, 2)
    assert so.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert session_options({}).graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert session_options({"graph_optimization_level": "disabled"}).graph_optimization_level == (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )


def test_providers_keep_the_declared_order_with_the_cpu_last() -> None:
    available = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert choose_providers(["TensorrtExecutionProvider", "CUDAExecutionProvider"], available) == (
        ["CUDAExecutionProvider", "CPUExecutionProvider"],
        ["TensorrtExecutionProvider"],
    )
    assert choose_providers([], available) == (["CPUExecutionProvider"], [])
    declared = build(Declared, {"execution_providers": ["XnnpackExecutionProvider"]})
    runtime = resolve_runtime(declared, ["CPUExecutionProvider"])
    assert runtime.providers == ["CPUExecutionProvider"] and runtime.unavailable == []


def test_sessions_feed_by_name_and_refuse_cleanly(tmp_path: Path) -> None:
    onnx.save(classifier(), str(tmp_path / "m.onnx"))
    session = open_session(tmp_path / "m.onnx", Runtime(["CPUExecutionProvider"], {"intra_op_num_threads": 1}))
    out = run_case(session, {"pixels": images(1)[0], "ignored": np.zeros(1)})
    assert list(out) == ["logits"] and out["logits"].shape == (1, 10)
    with pytest.raises(CaseRunError, match="no input 'pixels'"):
        run_case(session, {})
    with pytest.raises(CaseRunError, match="pixels"):
        run_case(session, {"pixels": np.zeros((1, 3, 16, 16), np.float64)})
    (tmp_path / "bad.onnx").write_bytes(b"not a graph")
    with pytest.raises(SessionError):
        open_session(tmp_path / "bad.onnx", Runtime(["CPUExecutionProvider"], {}))


@pytest.fixture(scope="module")
def qdq(tmp_path_factory: pytest.TempPathFactory) -> onnx.ModelProto:
    root = tmp_path_factory.mktemp("qdq")
    onnx.save(classifier(), str(root / "f.onnx"))
    return onnx.load(str(quantize(root / "f.onnx", root / "q.onnx", images(4), per_channel=True)))


SETTINGS = {"quant_format": "QDQ", "per_channel": True, "activation_type": "QUInt8", "weight_type": "QInt8"}
TOOL = "onnxruntime.quantization.quantize_static"


def test_graph_facts_of_a_qdq_model(qdq: onnx.ModelProto) -> None:
    facts = read_facts(qdq)
    assert {"QuantizeLinear", "DequantizeLinear"} <= facts.ops
    assert facts.weight_types == {onnx.TensorProto.INT8}
    assert facts.activation_types == {onnx.TensorProto.UINT8}
    assert facts.per_channel


def test_a_truthful_transform_has_no_contradiction(qdq: onnx.ModelProto) -> None:
    assert list(contradictions(transform(TOOL, SETTINGS), read_facts(qdq))) == []


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"quant_format": "QOperator"}, "quant_format is QOperator"),
        ({"weight_type": "QUInt8"}, "weight_type is QUInt8, but the graph's weights are QInt8"),
        ({"activation_type": "QuantType.QInt8"}, "activation_type is QInt8, but the graph's activations are QUInt8"),
        ({"per_channel": False}, "per_channel is false"),
    ],
)
def test_contradictions_are_named(qdq: onnx.ModelProto, change: dict[str, object], words: str) -> None:
    found = list(contradictions(transform(TOOL, {**SETTINGS, **change}), read_facts(qdq)))
    assert any(words in text for text in found), found


def test_transform_findings() -> None:
    where = {"file": "bundle.yaml", "line": 7}
    # A transform without its version and settings, or a variant without one, is refused by the schema.
    variant = {"name": "int8", "graph": {"path": "q.onnx"}, "derived_from": "baseline", "rules": []}
    for stated in ({"transform": {"tool": TOOL}}, {}):
        manifest = {"manifest_version": 1, "release": {"name": "r", "version": "1"}, "variants": [variant | stated]}
        assert {e.validator for e in validator("manifest").iter_errors(manifest)} == {"required"}
    floaty = transform_findings("int8", transform(TOOL, {}), classifier(), where)
    assert floaty[0].line == 7
    assert [f.severity for f in floaty] == [F.Severity.WARNING, F.Severity.ERROR]
    assert "transform.settings is empty" in floaty[0].message
    assert "should hold QuantizeLinear" in floaty[1].message and "int8 or uint8 initializers" in floaty[1].message
    fp16 = transform_findings(
        "half",
        transform("onnxconverter_common.float16", {"keep_io_types": True}),
        classifier(),
        where,
    )
    assert [f.severity for f in fp16] == [F.Severity.ERROR]
    assert "should hold float16 initializers" in fp16[0].message


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_and_clears() -> None:
    now = [0.0]
    stream = FakeTerminal()
    bar = P.Bar(stream, clock=lambda: now[0])
    bar.start("comparing", 4)
    bar.advance()
    assert stream.getvalue() == ""  # short comparisons show nothing
    now[0] = 1.0
    bar.describe("comparing int8")
    bar.advance()
    assert stream.getvalue().endswith("comparing int8 [###############...............] 2/4")
    bar.close()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_no_progress_bar_off_a_terminal() -> None:
    assert isinstance(P.for_run(True, io.StringIO()), P.NoProgress)
    assert isinstance(P.for_run(False, FakeTerminal()), P.NoProgress)
    assert isinstance(P.for_run(True, FakeTerminal()), P.Bar)


def test_weight_bytes_reads_headers_only(tmp_path: Path) -> None:
    model = classifier()
    expected = 4 * (8 * 3 * 9 + 8 + 16 * 8 * 9 + 16 + 10 * 16 + 10)
    assert weight_bytes(model) == expected
    onnx.save(model, str(tmp_path / "m.onnx"), save_as_external_data=True, location="m.data", size_threshold=0)
    assert weight_bytes(onnx.load(str(tmp_path / "m.onnx"), load_external_data=False)) == expected
    assert weight_bytes(None) == 0


def test_a_large_graph_runs_without_prepacked_copies(tmp_path: Path) -> None:
    onnx.save(classifier(), str(tmp_path / "m.onnx"))
    runtime = Runtime(["CPUExecutionProvider"], {})
    lean = open_session(tmp_path / "m.onnx", runtime, weight_bytes=LEAN_BYTES)
    plain = open_session(tmp_path / "m.onnx", runtime)
    x = {"pixels": images(1)[0]}
    # Unpacked weights take other kernels: the same figures to within rounding, not bit for bit.
    np.testing.assert_allclose(run_case(lean, x)["logits"], run_case(plain, x)["logits"], rtol=1e-5, atol=1e-6)
