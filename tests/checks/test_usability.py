"""NNAPI and CoreML judged offline: the figures in the report are those onnxruntime's own command prints
(`python -m onnxruntime.tools.check_onnx_model_mobile_usability`, run here as a separate process) for the
example's int8 QDQ variant and its float baseline."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundlekit import EXAMPLE

from checker.release.lock import lock
from checker.render import render
from checker.reports.files import load_report, validate

Cli = Callable[..., tuple[int, str, str]]
_FIGURES = re.compile(r"(\d+) partitions with a total of (\d+)/(\d+) nodes can be handled by the (.+) EP\.")
_VERDICT = re.compile(r"Model should perform well with (.+) as is: (YES|MAYBE|NO)")


def tool_figures(model: Path) -> dict[str, dict[str, Any]]:
    """Per provider the tool checks: its first (as shipped) figures and verdict, from the command's own log."""
    done = subprocess.run(
        [sys.executable, "-m", "onnxruntime.tools.check_onnx_model_mobile_usability", str(model)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    out: dict[str, dict[str, Any]] = {}
    for line in done.stderr.splitlines():
        if (m := _FIGURES.search(line)) and m.group(4) not in out:
            out[m.group(4)] = {"partitions": int(m.group(1)), "supported": int(m.group(2)), "nodes": int(m.group(3))}
        elif m := _VERDICT.search(line):
            out[m.group(1)]["suitability"] = m.group(2)
    return out


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mobile") / "mobilenet-tiny"
    shutil.copytree(EXAMPLE, root)
    text = (root / "bundle.yaml").read_text()
    declared = "execution_providers: [NnapiExecutionProvider, CoreMLExecutionProvider, CPUExecutionProvider]"
    (root / "bundle.yaml").write_text(text.replace("execution_providers: [CPUExecutionProvider]", declared))
    assert lock(root).ok
    return root


def test_the_mobile_providers_coverage_is_the_tools_own(cli: Cli, bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, text, err = cli("verify", bundle, "--format", "json", "-o", out)
    assert code == 0, err
    report = json.loads(out.read_text())
    validate(report, out)
    [one] = report["bundles"]
    entries = {(u["graph"], u["ep"]): u for u in one["usability"]}
    assert set(entries) == {
        (g, ep) for g in ("baseline", "int8") for ep in ("NNAPI", "CoreML NeuralNetwork", "CoreML MLProgram")
    }
    for graph, file in (("baseline", "model.onnx"), ("int8", "model.int8.onnx")):
        for ep, figures in tool_figures(bundle / file).items():
            entry = entries[(graph, ep)]
            assert {k: entry[k] for k in figures} == figures, (graph, ep)
            assert entry["provider"] == ("NnapiExecutionProvider" if ep == "NNAPI" else "CoreMLExecutionProvider")
            assert entry["log"][0].startswith(f"{figures['partitions']} partitions with a total of")
    # The QDQ variant: CoreML cannot take its QuantizeLinear/DequantizeLinear nodes, and the tool says so.
    mlprogram = entries[("int8", "CoreML MLProgram")]
    assert "ai.onnx:QuantizeLinear" in mlprogram["unsupported_ops"]
    assert sum(mlprogram["partition_sizes"]) == mlprogram["supported"]
    warned = [f for f in one["findings"] if f["id"] == "runtime.usability"]
    assert [f["details"]["graph"] for f in warned] == ["int8"]  # the baseline's verdict with fixed shapes is not NO
    fixed = mlprogram["fixed_shape"]
    shown = f"{mlprogram['supported']} of {mlprogram['nodes']} nodes ({fixed['supported']} in {fixed['partitions']}"
    assert f"CoreML MLProgram takes {shown} partitions with fixed shapes)" in warned[0]["message"]
    assert "is not recommended with this model" in warned[0]["message"]
    sentence = f"int8, CoreML MLProgram: takes {mlprogram['supported']} of {mlprogram['nodes']} nodes"
    assert sentence in text and sentence in render("markdown", load_report(out))
