"""The OpenVINO execution provider's placement, in a --runtime environment with onnxruntime-openvino from the
package index: every node of the example on OpenVINO with its CPU fallback disabled, and a graph with an
operator OpenVINO leaves to the CPU (ai.onnx.ml Binarizer). Each figure is held to onnxruntime-openvino asked
alone, in the same environment, by a script that shares no code with the checker."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from bundlekit import EXAMPLE, manifest, put, write_manifest
from onnx import TensorProto, helper

from checker.release.lock import lock
from checker.reports.files import validate

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("runtimes")]
Cli = Callable[..., tuple[int, str, str]]
OPENVINO = "OpenVINOExecutionProvider"
SPEC = "onnxruntime-openvino==1.24.1"
LABEL = "onnxruntime-openvino 1.24.1"

_PROBE = """
import json, sys
import onnxruntime as ort
path, forbid = sys.argv[1], sys.argv[2] == "1"
so = ort.SessionOptions()
so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
s = ort.InferenceSession(path, so, providers=["OpenVINOExecutionProvider", "CPUExecutionProvider"])
out = {"subgraphs": [[g.ep_name, [n.op_type + ":" + n.name for n in g.get_nodes()]]
                     for g in s.get_provider_graph_assignment_info()]}
so = ort.SessionOptions()
so.log_severity_level = 4
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
try:
    ort.InferenceSession(path, so, providers=["OpenVINOExecutionProvider"])
    out["opens_alone"] = True
except Exception:
    out["opens_alone"] = False
print(json.dumps(out))
"""


def _report(cli: Cli, tmp_path: Path, bundle: Path) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.json')))}.json"
    code, text, err = cli("verify", bundle, "--runtime", SPEC, "--format", "json", "-o", out)
    assert code in (0, 1), err
    report = json.loads(out.read_text())
    validate(report, out)
    bundle_report = report["bundles"][0]
    installs = [f for f in bundle_report["findings"] if f["id"] == "runtime.install"]
    if installs and "No matching distribution" in installs[0]["message"]:
        pytest.skip(f"onnxruntime-openvino has no wheel for this Python here: {installs[0]['message']}")
    return code, bundle_report, text


def _probe(path: Path) -> dict[str, Any]:
    from checker.runtimes.envs import ensure

    env = ensure("onnxruntime-openvino", "1.24.1", offline=True, find_links=[])  # installed by the run before
    done = subprocess.run([str(env.python), "-I", "-c", _PROBE, str(path), "1"], capture_output=True, text=True,
                          timeout=300, check=True)  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _openvino(report: dict[str, Any], graph: str) -> dict[str, Any]:
    [entry] = [p for p in report["placement"] if p["runtime"] == LABEL and p["graph"] == graph]
    return entry


def test_openvino_takes_every_node_of_the_example_and_needs_no_fallback(
    cli: Cli, runtime_cache: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "mobilenet-tiny"
    shutil.copytree(EXAMPLE, bundle)
    text = (bundle / "bundle.yaml").read_text()
    declared = f"execution_providers: [{OPENVINO}, CPUExecutionProvider]\n  fallback: forbid"
    (bundle / "bundle.yaml").write_text(text.replace("execution_providers: [CPUExecutionProvider]", declared))
    assert lock(bundle).ok
    code, report, text = _report(cli, tmp_path, bundle)
    assert code == 0, [f["message"] for f in report["findings"] if f["severity"] == "error"]
    assert not [f for f in report["findings"] if f["id"] == "runtime.fallback"]
    # Proven in the onnxruntime-openvino environment: not a check left undone, though this machine's own
    # onnxruntime lacks the provider (so `--strict` can pass a bundle that forbids the fallback).
    assert report["not_run"] == [] and report["status"] == "pass"
    for graph, file in (("baseline", "model.onnx"), ("int8", "model.int8.onnx")):
        alone = _probe(bundle / file)
        entry = _openvino(report, graph)
        [(provider, nodes)] = alone["subgraphs"]  # one partition, on OpenVINO
        assert provider == OPENVINO and alone["opens_alone"] is True
        assert entry["providers"] == {
            OPENVINO: {"nodes": len(nodes), "partitions": 1, "ops": _ops(nodes)},
        }
        assert entry["nodes"] == len(nodes) and entry["fallback_count"] == 0
        assert entry["forbid"] == {"opened": True}  # runtime.fallback: forbid, proven
        assert f"[{LABEL}] {graph}: {OPENVINO} takes {len(nodes)} of {len(nodes)} nodes (1 partition)" in text
    # This machine's own onnxruntime has no OpenVINO: its CPU placement is there beside it.
    assert {p["provider"] for p in report["placement"] if p["runtime"] != LABEL} == (
        {"CPUExecutionProvider"}
        if OPENVINO not in ort.get_available_providers()
        else {OPENVINO, "CPUExecutionProvider"}
    )


def _ops(nodes: list[str]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for node in nodes:
        op = node.split(":", 1)[0]
        counted[op] = counted.get(op, 0) + 1
    return dict(sorted(counted.items()))


def _binarizer_bundle(root: Path, fallback: str) -> Path:
    """Relu, then an ai.onnx.ml Binarizer OpenVINO does not take, then Relu: the CPU provider takes the rest."""
    nodes = [
        helper.make_node("Relu", ["x"], ["h"], name="first"),
        helper.make_node("Binarizer", ["h"], ["z"], domain="ai.onnx.ml", name="binarize", threshold=0.5),
        helper.make_node("Relu", ["z"], ["y"], name="last"),
    ]
    graph = helper.make_graph(
        nodes, "binarized",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    put(root / "model.onnx", helper.make_model(graph, opset_imports=opsets, ir_version=8))
    data = manifest(runtime={"name": "onnxruntime", "version": ">=1.17,<2", "fallback": fallback,
                             "execution_providers": [OPENVINO, "CPUExecutionProvider"]})  # fmt: skip
    data["outputs"][0]["shape"] = ["batch", 4]
    rng = np.random.default_rng(3)
    for i in range(3):
        x = rng.standard_normal((2, 4)).astype(np.float32)
        put(root / f"cases/x{i}.npy", x)
        put(root / f"cases/y{i}.npy", (x > 0.5).astype(np.float32))
        files = {"inputs": {"x": f"cases/x{i}.npy"}, "expected": {"y": f"cases/y{i}.npy"}}
        data["comparison"]["cases"].append({"name": f"c{i}", "tags": ["edge"] if i == 0 else [], **files})
    write_manifest(root, data)
    return root


def test_a_node_openvino_leaves_to_the_cpu_is_a_fallback(cli: Cli, runtime_cache: Path, tmp_path: Path) -> None:
    bundle = _binarizer_bundle(tmp_path / "allowed", "allow")
    code, report, _ = _report(cli, tmp_path, bundle)
    alone = _probe(bundle / "model.onnx")
    on_openvino = [n for p, nodes in alone["subgraphs"] if p == OPENVINO for n in nodes]
    elsewhere = [n for p, nodes in alone["subgraphs"] if p != OPENVINO for n in nodes]
    assert "Binarizer:binarize" in elsewhere and on_openvino  # OpenVINO takes some, not all
    entry = _openvino(report, "baseline")
    assert entry["providers"][OPENVINO]["nodes"] == len(on_openvino)
    assert sorted(entry["fallback"]) == sorted(elsewhere) and entry["fallback_count"] == len(elsewhere)
    [fallback] = [f for f in report["findings"] if f["id"] == "runtime.fallback"]
    assert fallback["severity"] == "warning" and code == 0
    assert fallback["message"].startswith(
        f"[{LABEL}] baseline: declared execution provider {OPENVINO} takes {len(on_openvino)} of its 3 nodes; "
        f"{len(elsewhere)} fall back to CPUExecutionProvider: "
    )
    assert "Binarizer:binarize" in fallback["details"]["nodes"]

    forbidden = _binarizer_bundle(tmp_path / "forbidden", "forbid")
    code, report, _ = _report(cli, tmp_path, forbidden)
    entry = _openvino(report, "baseline")
    assert entry["forbid"]["opened"] is alone["opens_alone"] is False
    [refused] = [f for f in report["findings"] if f["id"] == "runtime.fallback"]
    assert refused["severity"] == "error" and code == 1
    assert "with session.disable_cpu_ep_fallback=1 onnxruntime does not open the graph" in refused["message"]
