"""Optimization levels: a QDQ Softmax made by onnxruntime.quantization runs as a float Softmax at level basic and
as a QLinearSoftmax at extended (QDQSelectorActionTransformer), and the numbers differ by a quantization step.
Each declared level is judged; the level where the variant fails is named, with the optimizer responsible."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from bundlekit import manifest, put, write_manifest
from onnx import TensorProto, helper

Cli = Callable[..., tuple[int, str, str]]
SHAPE = [1, 4, 16, 64]


def _softmax(root: Path) -> tuple[Path, Path]:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"])],
        "softmax",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    put(root / "model.onnx", model)
    rng = np.random.default_rng(0)

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items = iter([rng.standard_normal(SHAPE).astype(np.float32) for _ in range(4)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            item = next(self._items, None)
            return None if item is None else {"x": item}

    quantize_static(
        str(root / "model.onnx"), str(root / "int8.onnx"), Reader(), quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
    )  # fmt: skip
    return root / "model.onnx", root / "int8.onnx"


def _figure(path: Path, level: str, cases: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """The variant's max_abs against the reference at `level`: onnxruntime alone."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, f"ORT_ENABLE_{level.upper()}")
    session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return max(float(np.abs(session.run(None, {"x": x})[0] - y).max()) for x, y in cases)


def _bundle(root: Path) -> tuple[float, float, str]:
    import onnxruntime as ort

    float_path, int8_path = _softmax(root)
    reference = ort.InferenceSession(str(float_path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    cases, entries = [], []
    for i in range(3):
        x = rng.standard_normal(SHAPE).astype(np.float32)
        y = reference.run(None, {"x": x})[0]
        cases.append((x, y))
        put(root / f"cases/x{i}.npy", x)
        put(root / f"cases/y{i}.npy", y)
        entries.append({"name": f"c{i}", "tags": ["edge"] if i == 0 else [], "inputs": {"x": f"cases/x{i}.npy"},
                        "expected": {"y": f"cases/y{i}.npy"}})  # fmt: skip
    basic, extended = _figure(int8_path, "basic", cases), _figure(int8_path, "extended", cases)
    limit = (basic + extended) / 2
    data: dict[str, Any] = manifest(
        inputs=[{"name": "x", "dtype": "float32", "shape": list(SHAPE), "meaning": "tabular",
                 "preprocessing": {"kind": "custom", "description": "logits"}}],
        outputs=[{"name": "y", "dtype": "float32", "shape": list(SHAPE), "meaning": "regression"}],
        comparison={"reference": {"description": "the float graph"}, "cases": entries,
                    "rules": [{"output": "y", "check": "allclose", "atol": 1e-5, "rtol": 1e-4}]},
        variants=[{"name": "int8", "graph": {"path": "int8.onnx"}, "derived_from": "baseline",
                   "transform": {"tool": "onnxruntime.quantization.quantize_static", "version": ort.__version__,
                                 "settings": {"quant_format": "QDQ", "activation_type": "QUInt8",
                                              "weight_type": "QInt8", "per_channel": False,
                                              "calibrate_method": "MinMax"}},
                   "rules": [{"output": "y", "check": "max_abs", "max": limit}]}],
    )  # fmt: skip
    # The manifest's own level is the one that holds: the other, declared too, is judged as a set and fails.
    holds = "basic" if basic < extended else "extended"
    data["runtime"].update(
        session_options={"graph_optimization_level": holds}, optimization_levels=["basic", "extended"]
    )
    write_manifest(root, data)
    return basic, extended, holds


def test_the_level_that_fails_is_judged_and_its_optimizer_named(cli: Cli, tmp_path: Path) -> None:
    basic, extended, holds = _bundle(tmp_path / "b")
    assert basic != extended  # the model's property: a float Softmax and QLinearSoftmax's table round apart
    fails = "extended" if holds == "basic" else "basic"
    figures = {"basic": basic, "extended": extended}
    out = tmp_path / "r.json"
    code, _, err = cli("verify", tmp_path / "b", "--format", "json", "-o", out)
    assert code == 1, err
    bundle = json.loads(out.read_text())["bundles"][0]
    [level] = bundle["runtimes"]
    assert level["runtime"] == f"optimization level {fails}" and level["optimization_level"] == fails
    [own] = [r for c in bundle["comparisons"] if c["graph"] == "int8" for r in c["rules"]]
    [there] = [r for c in level["comparisons"] if c["graph"] == "int8" for r in c["rules"]]
    assert own["passed"] and own["measured"] == np.float32(figures[holds])
    assert not there["passed"] and there["measured"] == np.float32(figures[fails])
    [found] = [f for f in bundle["findings"] if f["id"] == "runtime.optimization_level"]
    assert found["details"]["level"] == fails and found["details"]["holds_at"] == holds
    assert found["details"]["optimizer"] == "QDQSelectorActionTransformer"
    assert "disabling it at level extended gives the outputs of level basic" in found["message"]
    # --opt-levels judges the levels asked for, here only the declared one: nothing more is run.
    code, _, err = cli("verify", tmp_path / "b", "--opt-levels", holds, "--format", "json", "-o", out)
    assert code == 0, err
    assert "runtimes" not in json.loads(out.read_text())["bundles"][0]


def test_opt_levels_refuses_an_unknown_level(cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli("verify", tmp_path, "--opt-levels", "basic,turbo")
    assert code == 2 and "'basic,turbo' is not a list of disabled, basic, extended, all" in err
