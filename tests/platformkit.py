"""A bundle whose int8 variant saturates onnxruntime's x86 kernels without VNNI, and runs of it under qemu.

The float graph is one MatMul whose weights come in pairs of the same sign, fed inputs near 1: quantized U8S8
(activations uint8 up to 255, weights int8 up to 127), each pair of products sums to about 2 x 255 x 127, more
than the int16 that AVX2's vpmaddubsw sums into. VNNI and aarch64 kernels sum into int32 and stay exact.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from bundlekit import put, write_manifest
from onnx import TensorProto, helper, numpy_helper

K, N = 64, 8
QEMU = shutil.which("qemu-x86_64")
needs_qemu = pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 is not installed (apt-get install qemu-user)")
V3_MODEL = "Haswell-v4"
LIMIT = 2.0  # the int8 variant's max_abs against the reference: about 0.8 exact, about 6 saturated


def float_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = np.sign(rng.standard_normal((K // 2, N))).repeat(2, axis=0) * rng.uniform(0.9, 1.0, (K, N))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])],
        "pairs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", N])],
        [numpy_helper.from_array(w.astype(np.float32), "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def inputs(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.8, 1.0, (2, K)).astype(np.float32) for _ in range(count)]


def quantized(float_path: Path, out_path: Path) -> Path:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items = iter([*inputs(4, 7), np.zeros((2, K), np.float32)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            item = next(self._items, None)
            return None if item is None else {"x": item}

    quantize_static(
        str(float_path), str(out_path), Reader(), quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=False,
    )  # fmt: skip
    return out_path


def write_bundle(root: Path, cases: int = 4, runtime: dict[str, Any] | None = None, limit: float = LIMIT) -> Path:
    """The bundle: expected outputs from the float graph here (float MatMul agrees across CPUs to 1e-5). With the
    default limit the int8 variant fails wherever the kernels saturate (an x86 CPU without VNNI, this machine
    included if it is one) and passes elsewhere."""
    import onnxruntime as ort

    model = float_model()
    put(root / "model.onnx", model)
    quantized(root / "model.onnx", root / "int8.onnx")
    session = ort.InferenceSession(str(root / "model.onnx"), providers=["CPUExecutionProvider"])
    entries = []
    for i, x in enumerate(inputs(cases, 11)):
        put(root / f"cases/x{i}.npy", x)
        put(root / f"cases/y{i}.npy", session.run(None, {"x": x})[0])
        entries.append({"name": f"c{i}", "inputs": {"x": f"cases/x{i}.npy"}, "expected": {"y": f"cases/y{i}.npy"}})
    entries[0]["tags"] = ["edge"]
    data = {
        "manifest_version": 1,
        "release": {"name": "pairs", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {"name": "x", "dtype": "float32", "shape": ["batch", K], "meaning": "tabular",
             "preprocessing": {"kind": "custom", "description": "features in [0.8, 1]"}},
        ],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", N], "meaning": "regression"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17,<2", **(runtime or {})},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "the float graph, onnxruntime CPU"},
            "cases": entries,
            "rules": [{"output": "y", "check": "allclose", "atol": 1e-3, "rtol": 1e-4}],
        },
        "variants": [
            {
                "name": "int8",
                "graph": {"path": "int8.onnx"},
                "derived_from": "baseline",
                "transform": {
                    "tool": "onnxruntime.quantization.quantize_static",
                    "version": "1.32.0",
                    "settings": {"quant_format": "QDQ", "activation_type": "QUInt8", "weight_type": "QInt8",
                                 "per_channel": False, "calibrate_method": "MinMax"},
                },
                "rules": [{"output": "y", "check": "max_abs", "max": limit}],
            }
        ],
    }  # fmt: skip
    write_manifest(root, data)
    return root


# An independent run: onnxruntime alone, in a fresh interpreter (under qemu when asked), no checker code.
_PROBE = """
import json, sys
import numpy as np, onnxruntime as ort
root, count, config = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
so = ort.SessionOptions()
for k, v in config.items():
    so.add_session_config_entry(k, v)
s = ort.InferenceSession(root + "/int8.onnx", so, providers=["CPUExecutionProvider"])
worst = 0.0
for i in range(count):
    x, y = np.load(f"{root}/cases/x{i}.npy"), np.load(f"{root}/cases/y{i}.npy")
    worst = max(worst, float(np.abs(s.run(None, {"x": x})[0] - y).max()))
print(json.dumps(worst))
"""


def int8_max_abs(root: Path, cases: int, model: str | None, config: dict[str, str] | None = None) -> float:
    """The variant's max_abs against the reference over every case, natively or under qemu -cpu MODEL."""
    launcher = [str(QEMU), "-cpu", model] if model else []
    command = [*launcher, sys.executable, "-I", "-c", _PROBE, str(root), str(cases), json.dumps(config or {})]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


QEMU_ARM = shutil.which("qemu-aarch64")
needs_arm_userland = pytest.mark.skipif(
    QEMU_ARM is None or shutil.which("mmdebstrap") is None,
    reason="the aarch64 platform needs qemu-aarch64 and mmdebstrap (apt-get install qemu-user mmdebstrap)",
)


def int8_max_abs_arm(root: Path, cases: int, model: str, view: Path) -> float:
    """The same probe as int8_max_abs, by the userland's own Python under qemu-aarch64 -cpu MODEL -L VIEW."""
    python = view / "usr" / "bin" / "python3.11"
    command = [
        str(QEMU_ARM),
        "-cpu",
        model,
        "-L",
        str(view),
        str(python),
        "-I",
        "-c",
        _PROBE,
        str(root),
        str(cases),
        "{}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


_DUMP = """
import sys
import numpy as np, onnxruntime as ort
root, graph, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = ort.InferenceSession(root + "/" + graph, providers=["CPUExecutionProvider"])
np.savez(out, *[s.run(None, {"x": np.load(f"{root}/cases/x{i}.npy")})[0] for i in range(count)])
"""


def outputs(root: Path, graph: str, cases: int, model: str | None, out: Path) -> list[np.ndarray]:
    """Every case's output of `graph`, natively or under qemu -cpu MODEL, by onnxruntime alone."""
    launcher = [str(QEMU), "-cpu", model] if model else []
    command = [*launcher, sys.executable, "-I", "-c", _DUMP, str(root), graph, str(cases), str(out)]
    subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    with np.load(out) as data:
        return [data[f"arr_{i}"] for i in range(cases)]


def reduce_range_variant(root: Path, out: Path) -> Path:
    """The bundle's int8 variant re-quantized by onnxruntime.quantization with reduce_range=True, calibrated on
    the bundle's cases as its recorded transform says (no calibration_cases: all of them), in a copy of it."""
    import shutil

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    shutil.copytree(root, out)
    feeds = iter([{"x": np.load(p)} for p in sorted((root / "cases").glob("x*.npy"), key=lambda p: int(p.stem[1:]))])

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(feeds, None)

    quantize_static(
        str(root / "model.onnx"), str(out / "int8.onnx"), Reader(), quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=False, reduce_range=True,
    )  # fmt: skip
    return out
