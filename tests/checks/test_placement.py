"""Placement on this machine's onnxruntime: every node of the example on the CPU provider, a declared provider
that takes none (onnxruntime's own AzureExecutionProvider, in every CPU build), `runtime.fallback: forbid`
proven or refused by onnxruntime, and a declared provider this machine lacks. The node counts are held to the
graph onnxruntime itself writes out after its optimizations (optimized_model_filepath), not to the checker."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import onnxruntime as ort
import pytest
from bundlekit import EXAMPLE

from checker.release.lock import lock
from checker.render import render
from checker.reports.files import validate
from checker.reports.model import Report

Cli = Callable[..., tuple[int, str, str]]
AZURE = "AzureExecutionProvider"
needs_azure = pytest.mark.skipif(
    AZURE not in ort.get_available_providers(), reason="this onnxruntime build has no AzureExecutionProvider"
)


def _bundle(tmp_path: Path, providers: str, fallback: str | None = None) -> Path:
    bundle = tmp_path / "mobilenet-tiny"
    shutil.copytree(EXAMPLE, bundle)
    text = (bundle / "bundle.yaml").read_text()
    declared = f"execution_providers: [{providers}]" + (f"\n  fallback: {fallback}" if fallback else "")
    (bundle / "bundle.yaml").write_text(text.replace("execution_providers: [CPUExecutionProvider]", declared))
    assert lock(bundle).ok  # the declared providers are part of the release's digest
    return bundle


def _verify(cli: Cli, bundle: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code, text, err = cli("verify", bundle, "--format", "json", "-o", out, *extra)
    assert code in (0, 1), err
    report = json.loads(out.read_text())
    validate(report, out)
    return code, report["bundles"][0], text


def optimized_nodes(path: Path, tmp_path: Path) -> list[tuple[str, str]]:
    """(op type, name) of every node of the graph as onnxruntime partitions it among the providers: after the
    basic-level optimizations (the higher levels' fusions come after partitioning), from its own file."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(tmp_path / f"{path.stem}.optimized.onnx")
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    model = onnx.load(so.optimized_model_filepath)
    return [(n.op_type, n.name) for n in model.graph.node]


def test_every_node_of_the_example_is_on_the_cpu_provider(cli: Cli, tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, "CUDAExecutionProvider, CPUExecutionProvider")
    code, report, text = _verify(cli, bundle, tmp_path / "r.json")
    assert code == 0
    markdown = render("markdown", Report.from_dict({"checker_version": "0", "status": "pass", "bundles": [report]}))
    placement = {(p["graph"], p["provider"]): p for p in report["placement"]}
    # CUDA is not on this machine: no placement of it, and the missing-provider warning says so.
    assert set(placement) == {("baseline", "CPUExecutionProvider"), ("int8", "CPUExecutionProvider")}
    assert [f["id"] for f in report["findings"] if f["severity"] == "warning"] == ["runtime.provider"]
    assert not [f for f in report["findings"] if f["id"] == "runtime.fallback"]
    for graph, file in (("baseline", "model.onnx"), ("int8", "model.int8.onnx")):
        entry = placement[(graph, "CPUExecutionProvider")]
        nodes = optimized_nodes(bundle / file, tmp_path)
        assert entry["nodes"] == len(nodes) and list(entry["providers"]) == ["CPUExecutionProvider"]
        cpu = entry["providers"]["CPUExecutionProvider"]
        assert cpu["nodes"] == len(nodes)
        counted: dict[str, int] = {}
        for op, _ in nodes:
            counted[op] = counted.get(op, 0) + 1
        assert cpu["ops"] == counted
        assert entry["optimization_level"] == "all" and "get_provider_graph_assignment_info" in entry["measured_by"]
        sentence = f"{graph}: CPUExecutionProvider takes {len(nodes)} of {len(nodes)} nodes ({len(nodes)} partitions)"
        assert sentence in text and sentence in markdown
    assert (
        placement[("int8", "CPUExecutionProvider")]["providers"]["CPUExecutionProvider"]["ops"]["DequantizeLinear"] > 0
    )


def test_a_declared_cuda_provider_that_must_not_fall_back_is_a_check_not_run_here(cli: Cli, tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, "CUDAExecutionProvider, CPUExecutionProvider", fallback="forbid")
    code, report, text = _verify(cli, bundle, tmp_path / "r.json")
    assert code == 0
    assert [n["check"] for n in report["not_run"]] == ["placement of CUDAExecutionProvider"]
    assert "1 check not run: placement of CUDAExecutionProvider" in text.splitlines()[0]
    code, _, _ = _verify(cli, bundle, tmp_path / "strict.json", "--strict")
    assert code == 1


@needs_azure
def test_a_declared_provider_that_takes_no_node_falls_back(cli: Cli, tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, f"{AZURE}, CPUExecutionProvider")
    code, report, text = _verify(cli, bundle, tmp_path / "r.json")
    assert code == 0  # allowed: a warning
    falls = [f for f in report["findings"] if f["id"] == "runtime.fallback"]
    assert [(f["severity"], f["details"]["graph"]) for f in falls] == [("warning", "baseline"), ("warning", "int8")]
    entry = next(p for p in report["placement"] if p["graph"] == "baseline" and p["provider"] == AZURE)
    nodes = optimized_nodes(bundle / "model.onnx", tmp_path)
    assert list(entry["providers"]) == ["CPUExecutionProvider"] and entry["fallback_count"] == len(nodes)
    assert entry["fallback"] == [f"{op}:{name}" for op, name in nodes]
    assert f"{AZURE} takes none of its {len(nodes)} nodes: {nodes[0][0]}:{nodes[0][1]}" in falls[0]["message"]
    assert f"{AZURE} takes none of {len(nodes)} nodes" in text


@needs_azure
def test_forbidden_fallback_is_refused_by_onnxruntime_and_an_error(cli: Cli, tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, f"{AZURE}, CPUExecutionProvider", fallback="forbid")
    code, report, _ = _verify(cli, bundle, tmp_path / "r.json")
    assert code == 1
    falls = [f for f in report["findings"] if f["id"] == "runtime.fallback"]
    assert {f["severity"] for f in falls} == {"error"} and len(falls) == 2
    # onnxruntime's own refusal, quoted: the session did not open with session.disable_cpu_ep_fallback=1.
    assert all("fallback to CPU EP has been explicitly disabled" in f["message"] for f in falls)
    assert falls[0]["line"] == (bundle / "bundle.yaml").read_text().splitlines().index("  fallback: forbid") + 1
    entry = next(p for p in report["placement"] if p["graph"] == "int8")
    assert entry["forbid"]["opened"] is False and "disabled" in entry["forbid"]["error"]
    assert entry["fallback_count"] == len(optimized_nodes(bundle / "model.int8.onnx", tmp_path))
