"""What a variant gains: exact file sizes, and paired timing whose direction a large built-in slowdown fixes.

No assertion depends on this machine's speed: sizes are file facts, and the slow variant runs a chain of
a hundred 256x256 matrix products the baseline does not, a factor far beyond any noise.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import onnx
import pytest
from bundlekit import put, write_manifest
from modelkit import QDQ_SETTINGS, run
from onnx import TensorProto, helper, numpy_helper
from taskkit import quantized

from checker import findings as F
from checker.compare.timing import median_interval, paired
from checker.context import Options
from checker.manifest.schema import load
from checker.platforms.emulation import emulated
from checker.render import markdown, text
from checker.render.gains import gain_sentence
from checker.reports.model import Report
from checker.reports.parts.gains import Gain
from checker.verify import verify_bundle

WIDTH = 256
CHAIN = 100


def _model(nodes: list[Any], inits: dict[str, np.ndarray], features: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "gain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def wide(seed: int = 0) -> onnx.ModelProto:
    """x[., 256] -> MatMul 256x256 -> Relu -> MatMul 256x4: its weights are nearly all of its file."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
    ]
    return _model(nodes, {"w1": rng.normal(0, 0.1, (WIDTH, WIDTH)), "w2": rng.normal(0, 0.1, (WIDTH, 4))}, WIDTH)


def small(chain: int = 0) -> onnx.ModelProto:
    """y = x @ w; with `chain`, also `chain` products of a 256x256 matrix whose sum is added times zero."""
    rng = np.random.default_rng(1)
    inits = {"w": np.eye(5, 4), "p": rng.normal(0, 0.1, (5, WIDTH)), "m": rng.normal(0, 0.05, (WIDTH, WIDTH))}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y" if not chain else "logits"], name="fc")]
    if chain:
        inits["zero"] = np.zeros(1)
        nodes.append(helper.make_node("MatMul", ["x", "p"], ["h0"], name="spread"))
        for i in range(chain):
            nodes.append(helper.make_node("MatMul", [f"h{i}", "m"], [f"z{i}"], name=f"work{i}"))
            nodes.append(helper.make_node("Tanh", [f"z{i}"], [f"h{i + 1}"], name=f"bound{i}"))
        nodes.append(helper.make_node("ReduceSum", [f"h{chain}"], ["total"], name="total", keepdims=1))
        nodes.append(helper.make_node("Mul", ["total", "zero"], ["nothing"], name="nothing"))
        nodes.append(helper.make_node("Add", ["logits", "nothing"], ["y"], name="out"))
    else:  # the same weights, unused, so that the slow variant is no larger than its baseline by much
        inits.pop("p")
    return _model(nodes, inits, 5)


def bundle(root: Path, baseline: onnx.ModelProto, variants: dict[str, onnx.ModelProto], **extra: Any) -> Path:
    features = baseline.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    rng = np.random.default_rng(3)
    cases = []
    for i in range(6):
        x = rng.normal(0, 1, (1, features)).astype(np.float32)
        put(root / f"cases/x{i}.npy", x)
        put(root / f"cases/y{i}.npy", run(baseline, {"x": x})["y"])
        cases.append(
            {
                "name": f"c{i}",
                "tags": ["edge"],
                "inputs": {"x": f"cases/x{i}.npy"},
                "expected": {"y": f"cases/y{i}.npy"},
            }
        )
    put(root / "model.onnx", baseline)
    entries = []
    for name, model in variants.items():
        put(root / f"{name}.onnx", model)
        entry = {
            "name": name,
            "graph": {"path": f"{name}.onnx"},
            "derived_from": "baseline",
            "transform": {
                "tool": "onnxruntime.quantization.quantize_static",
                "version": "1.32.0",
                "settings": dict(QDQ_SETTINGS),
            },
            "rules": [{"output": "y", "check": "cosine", "min": 0.0}],
        }
        entry.update(extra.get(name, {}))
        entries.append(entry)
    data = {
        "manifest_version": 1,
        "release": {"name": "gain", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", features], "meaning": "tabular",
                    "preprocessing": {"kind": "custom", "description": "noise"}}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 4], "meaning": "regression"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17", "session_options": {"intra_op_num_threads": 1}},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {"reference": {"description": "the float graph"}, "cases": cases,
                       "rules": [{"output": "y", "check": "allclose", "atol": 1e-5}]},
        "variants": entries,
    }  # fmt: skip
    write_manifest(root, data)
    return root


def verified(root: Path, budget: float = 1.0) -> dict[str, Any]:
    whole = Report("0", [verify_bundle(root, Options(gain_budget_s=budget))]).to_dict()
    jsonschema.validate(whole, load("report"))
    report: dict[str, Any] = whole["bundles"][0]
    return report


def gains(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["variant"]: g for g in report["gains"]}


def no_gain(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["details"]["graph"]: f for f in report["findings"] if f["id"] == F.VARIANT_NO_GAIN}


def test_an_int8_variant_is_smaller_by_its_files_and_a_larger_one_gains_nothing(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    base = wide()
    int8 = quantized(base, tmp_path, [rng.normal(0, 1, (1, WIDTH)).astype(np.float32) for _ in range(8)])
    root = bundle(
        tmp_path / "b",
        base,
        {"int8": int8, "same": base},
        same={"transform": {"tool": "copy", "version": "1", "settings": {}}},
    )
    report = verified(root, budget=0.0)  # sizes alone: no timing
    found = gains(report)
    size = found["int8"]["size"]
    assert size["baseline_bytes"] == (root / "model.onnx").stat().st_size
    assert size["variant_bytes"] == (root / "int8.onnx").stat().st_size
    assert size["smaller"] == size["baseline_bytes"] / size["variant_bytes"] and 3.0 < size["smaller"] < 4.1
    assert found["same"]["size"]["smaller"] == 1.0
    assert "skipped" in found["int8"]["latency"]
    assert sorted(no_gain(report)) == ["same"]  # smaller beyond doubt needs no timing
    assert no_gain(report)["same"]["severity"] == "warning"
    timed = gains(verified(root, budget=0.3))["int8"]  # and timed: its speed with the interval around it
    interval = timed["latency"]["interval"]
    assert interval["low"] <= timed["latency"]["faster"] <= interval["high"] and timed["latency"]["rounds"] >= 2
    assert timed["size"] == size
    assert gain_sentence(Gain.from_dict(timed)).startswith(f"int8: {size['smaller']:.3g}x smaller (")


def test_a_slower_variant_gains_nothing_and_misses_its_expected_speed(tmp_path: Path) -> None:
    root = bundle(tmp_path / "b", small(), {"slow": small(CHAIN), "slow_expected": small(CHAIN)},
                  slow_expected={"expect": {"faster": 1.2}})  # fmt: skip
    report = verified(root)
    latency = gains(report)["slow"]["latency"]
    assert latency["faster"] < 0.5 and latency["interval"]["high"] < 1.0  # a hundred products: far slower
    assert latency["rounds"] >= 2 and latency["threads"] == {"intra_op_num_threads": 1}
    assert latency["variant_ms"] > latency["baseline_ms"]
    found = no_gain(report)
    assert found["slow"]["severity"] == "warning" and "neither smaller nor faster" in found["slow"]["message"]
    assert "1.2x faster" in found["slow_expected"]["message"]
    # On an emulated CPU (CI runs this file again under qemu-x86_64) the speed is no device figure: it only warns.
    why = emulated()
    assert found["slow_expected"]["severity"] == ("warning" if why else "error")
    assert latency.get("not_device_figure") == why
    read = Report.from_dict({"checker_version": "0", "bundles": [report]})
    shown = text.render(read)
    # A larger variant is called larger, never "0.96x smaller".
    assert re.search(r"  gain  slow: 1\.\d+x larger \(", shown) and "slow: 0." not in shown
    assert "paired rounds, threads: intra_op_num_threads=1" in shown
    assert "#### Gain over the baseline" in markdown.render(read)


def test_timing_on_shared_cores_is_not_a_device_figure(tmp_path: Path) -> None:
    root = bundle(tmp_path / "b", small(), {"slow": small(CHAIN)}, slow={"expect": {"faster": 1.2}})
    report = verify_bundle(root, Options(gain_budget_s=0.3, sharing=2)).to_dict()
    latency = gains(report)["slow"]["latency"]
    assert "shared cores" in latency["not_device_figure"]
    finding = no_gain(report)["slow"]
    assert finding["severity"] == "warning" and "not a device figure" in finding["message"]


def test_the_median_interval_and_the_stopping_rule() -> None:
    assert median_interval([1.0, 2.0, 3.0]) == (1.0, 2.0, 3.0)  # too few values: the range
    low, mid, high = median_interval([float(v) for v in range(1, 101)])
    assert (low, mid, high) == (40.0, 50.5, 61.0)  # the sign test's order statistics for n = 100
    ticks = iter(range(10**6))
    steady = paired(lambda i: None, lambda i: None, 3, budget_s=10**6, clock=lambda: float(next(ticks)))
    assert steady.stopped == "tight" and steady.faster == pytest.approx(1.0)


def test_the_budget_is_a_number_of_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    from bundlekit import EXAMPLE

    from checker.cli import main

    assert main(["verify", str(EXAMPLE), "--gain-budget", "-1"]) == 2
    assert "--gain-budget: '-1' is not a number of seconds" in capsys.readouterr().err
    assert main(["diagnose", str(EXAMPLE)]) == 2
    assert "diagnose needs --variant NAME (or --reproduce VARIANT)" in capsys.readouterr().err
