"""No absolute path of the machine in a finding's text: onnxruntime's `Load model from /abs/… failed` names the
graph bundle-relative in every rendering, however the bundle was named on the command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
import pytest
from bundlekit import EXAMPLE

from checker.cli import main


@pytest.fixture
def unloadable(tmp_path: Path) -> Path:
    """The example with its int8 graph's last node moved to a domain onnxruntime has no kernel for: the graph
    passes the ONNX checker, and onnxruntime refuses to load it, quoting its absolute path."""
    bundle = tmp_path / "work" / "models" / "m"
    shutil.copytree(EXAMPLE, bundle)
    model = onnx.load(bundle / "model.int8.onnx")
    model.graph.node[-1].domain = "com.example"
    model.opset_import.append(onnx.helper.make_opsetid("com.example", 1))
    onnx.save(model, bundle / "model.int8.onnx")
    assert main(["lock", str(bundle)]) == 0
    return bundle


@pytest.mark.parametrize("where", ["workspace", "elsewhere"])
def test_an_onnxruntime_load_error_names_the_graph_inside_the_bundle(
    unloadable: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    monkeypatch.chdir(tmp_path / "work" if where == "workspace" else tmp_path.parent)
    shown = {}
    for fmt in ("json", "text", "markdown", "junit"):
        capsys.readouterr()
        assert main(["verify", str(unloadable), "--format", fmt]) == 1
        shown[fmt] = capsys.readouterr().out
    (found,) = [f for f in json.loads(shown["json"])["bundles"][0]["findings"] if f["id"] == "comparison.runtime"]
    assert "Load model from model.int8.onnx failed" in found["message"]
    assert str(tmp_path) not in json.dumps([f["message"] for f in json.loads(shown["json"])["bundles"][0]["findings"]])
    for fmt, out in shown.items():  # the bundle's own path is as it was given; the finding's text is not
        assert "Load model from model.int8.onnx failed" in out and f"from {tmp_path}" not in out, fmt
