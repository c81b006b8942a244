"""The input-size envelope: each declared size runs on every platform and is compared across them.

Planted without depending on any CPU: a graph whose Reshape fixes the spatial size (it runs at the typical
size only), and a stand-in device whose outputs at the largest size are edited."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from enginekit import needs_node
from modelkit import CLASSES, classifier, classifier_cases, write_bundle
from onnx import helper, numpy_helper

from checker.reports.files import validate

Cli = Callable[..., tuple[int, str, str]]
ENVELOPE = {"height": {"min": 8, "typical": 16, "max": 48}, "width": {"min": 8, "typical": 16, "max": 48}}
RULES = [{"output": "logits", "check": "allclose", "atol": 1e-4, "rtol": 1e-3}]


def _bundle(root: Path, model: onnx.ModelProto, envelope: dict[str, Any] | None = None) -> Path:
    cases = classifier_cases(classifier(spatial="side"), count=3)  # 16 x 16 images; outputs from the float graph
    write_bundle(root, {"model.onnx": model}, cases, RULES)
    data = json.loads((root / "bundle.json").read_text())
    data["comparison"]["envelope"] = envelope or ENVELOPE
    (root / "bundle.json").write_text(json.dumps(data, indent=2))
    return root


def _fixed_size(model: onnx.ModelProto) -> onnx.ModelProto:
    """The classifier with its pooling replaced by a Reshape to the 16 x 16 map and a mean: the same numbers at
    the cases' size, and no run at any other."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    nodes = list(fixed.graph.node)
    at = next(i for i, n in enumerate(nodes) if n.op_type == "GlobalAveragePool")
    pool = nodes[at]
    channels = next(t for t in fixed.graph.initializer if t.name == "w2").dims[0]
    fixed.graph.initializer.append(numpy_helper.from_array(np.array([1, channels, 256], np.int64), "map_shape"))
    replacement = [
        helper.make_node("Reshape", [pool.input[0], "map_shape"], ["as_map"], name="fixed_reshape"),
        helper.make_node("ReduceMean", ["as_map"], [pool.output[0]], name="mean", axes=[2], keepdims=1),
    ]
    del fixed.graph.node[:]
    fixed.graph.node.extend([*nodes[:at], *replacement, *nodes[at + 1 :]])
    # ReduceMean leaves [1, C, 1]: Flatten makes [1, C] as the pooling did
    return fixed


def _verify(cli: Cli, bundle: Path, out: Path, *extra: str | Path) -> tuple[int, dict[str, Any]]:
    code, _, err = cli("verify", bundle, "--no-progress", "--offline", "--format", "json", "-o", out, *extra)
    assert code in (0, 1), err
    report = json.loads(out.read_text())
    validate(report, out)
    return code, report["bundles"][0]


def test_a_graph_that_runs_only_at_the_cases_size_fails_at_the_envelope(cli: Cli, tmp_path: Path) -> None:
    model = _fixed_size(classifier(spatial="side"))
    code, bundle = _verify(cli, _bundle(tmp_path / "b", model), tmp_path / "r.json")
    assert code == 1
    assert [c["status"] for c in bundle["comparisons"]] == ["pass"]  # at 16 x 16 it holds its rules
    found = [f for f in bundle["findings"] if f["id"] == "comparison.envelope"]
    assert sorted(f["details"]["point"] for f in found) == ["max", "min"]
    [large] = [f for f in found if f["details"]["point"] == "max"]
    assert large["details"]["sizes"] == {"height": 48, "width": 48} and large["line"] is not None
    assert "the envelope's max size (height 48, width 48)" in large["message"]


def test_an_envelope_the_checker_cannot_use_is_said_before_anything_is_allocated(cli: Cli, tmp_path: Path) -> None:
    model = classifier(spatial="side")
    for envelope, said in (
        ({"depth": {"min": 1, "max": 2}}, "names 'depth', which no input's shape names"),
        ({"height": {"min": 9, "max": 8}}, "are out of order"),
        ({"height": {"min": 1, "max": 65536}, "width": {"min": 1, "max": 65536}}, "more than the checker allocates"),
    ):
        root = _bundle(tmp_path / f"b{len(said)}", model, envelope)
        code, bundle = _verify(cli, root, tmp_path / "r.json")
        [found] = [f for f in bundle["findings"] if f["id"] == "comparison.envelope"]
        assert code == 1 and said in found["message"], found["message"]


def test_a_device_that_breaks_only_at_the_largest_size_is_named(cli: Cli, tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b", classifier(spatial="side"))
    assert cli("device-kit", root, "-o", tmp_path / "kit")[0] == 0
    kit = json.loads((tmp_path / "kit/kit.json").read_text())
    assert [c["name"] for c in kit["cases"]][-3:] == ["envelope-min", "envelope-typical", "envelope-max"]
    assert kit["session"]["dimension_overrides"] == {"batch": 1}  # height and width vary: not fixed
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(tmp_path / "kit/run.py"), "--out", str(out)], check=True, timeout=300)
    code, bundle = _verify(cli, root, tmp_path / "ok.json", "--device-outputs", out)
    assert code == 0
    [device] = bundle["runtimes"]
    assert [e["status"] for e in device["platform"]["envelope"]] == ["pass"] * 3
    large = out / "outputs/baseline/envelope-max/logits.npy"
    np.save(large, np.zeros((1, CLASSES), np.float32))
    code, bundle = _verify(cli, root, tmp_path / "broken.json", "--device-outputs", out)
    assert code == 1
    [envelope] = [f for f in bundle["findings"] if f["id"] == "comparison.envelope"]
    assert envelope["details"]["point"] == "max" and envelope["details"]["check"] == "allclose"
    [sentinel] = [f for f in bundle["findings"] if f["id"] == "comparison.sentinel"]
    assert sentinel["details"]["cases"] == ["envelope-max"] and sentinel["details"]["sentinel"] == "all_zero"


@needs_node
def test_node_runs_every_point_and_agrees_with_this_machine(cli: Cli, tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b", classifier(spatial="side"))
    code, bundle = _verify(cli, root, tmp_path / "r.json", "--platform", "node")
    assert code == 0
    [node] = bundle["runtimes"]
    record = node["platform"]["envelope"]
    assert [(e["point"], e["status"]) for e in record] == [("min", "pass"), ("typical", "pass"), ("max", "pass")]
    assert all(f["measured"] <= 1e-4 for e in record for f in e["figures"])
    shutil.rmtree(root)
