"""onnxruntime.quantization's own log lines never reach the reader: neither its root-logger advice nor the
coloured `[W:onnxruntime:…]` lines of the sessions it opens. Each run is a fresh process, as the command line
is: the root logger's handlers and onnxruntime's default logger are per process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from bundlekit import EXAMPLE
from onnx import TensorProto, helper, numpy_helper


def unused_initializer_model(path: Path) -> None:
    """Relu with an initializer no node reads: onnxruntime warns `Removing initializer 'unused'` on loading it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    unused = numpy_helper.from_array(np.ones(4, np.float32), "unused")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y], [unused])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def test_the_quantizer_the_checker_runs_logs_nothing(tmp_path: Path) -> None:
    unused_initializer_model(tmp_path / "m.onnx")
    code = f"""
import numpy as np
from checker.compare.requantize import calibration_reader, quantizer
from checker.context import Case
function = quantizer("onnxruntime.quantization.quantize_static")
case = Case("ones", [], {{"x": np.ones((1, 4), np.float32)}}, {{}}, {{}}, ())
function({str(tmp_path / "m.onnx")!r}, {str(tmp_path / "q.onnx")!r}, calibration_data_reader=calibration_reader([case]))
print("done")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    assert (tmp_path / "q.onnx").is_file()
    assert "onnxruntime:" not in done.stderr and "WARNING:root" not in done.stderr, done.stderr
    assert done.stderr.strip() == ""


def test_diagnose_requantize_prints_no_log_line_of_the_tool(tmp_path: Path) -> None:
    bundle = tmp_path / "m"
    shutil.copytree(EXAMPLE, bundle)
    argv = [sys.executable, "-m", "checker", "diagnose", str(bundle), "--variant", "int8", "--requantize"]
    done = subprocess.run([*argv, "--search-budget", "5"], capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    for stream in (done.stdout, done.stderr):
        assert "WARNING:root" not in stream and "pre-processing before quantization" not in stream
        assert "[W:onnxruntime" not in stream


def test_a_json_report_of_a_search_with_histogram_calibration_is_json(tmp_path: Path) -> None:
    """The search tries Percentile and Entropy calibration, whose calibrators print their progress: standard
    output must still hold the JSON report alone."""
    from releasekit import edit

    from checker.release.lock import lock

    bundle = tmp_path / "m"
    shutil.copytree(EXAMPLE, bundle)

    def tighten(tree: Any) -> None:  # 0.005: the int8 variant drifts 0.017 or more on every CPU
        rule = next(r for r in tree["variants"][0]["rules"] if r["check"] == "score_drift")
        rule["max"] = 0.005

    edit(bundle / "bundle.yaml", tighten)
    assert lock(bundle).ok
    argv = [sys.executable, "-m", "checker", "diagnose", str(bundle), "--variant", "int8", "--requantize"]
    done = subprocess.run([*argv, "--format", "json"], capture_output=True, text=True, check=False, timeout=900)
    assert done.returncode == 0, done.stderr
    tried = json.loads(done.stdout)["requantize"]["tried"]
    assert any("calibration" in t["label"] for t in tried)  # a histogram calibrator ran
