"""Helpers of the GitHub tests: reports, event payloads and small real bundles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from checker.findings import error, info, warning
from checker.reports.model import BundleReport, Comparison, Report, RuleResult
from checker.reports.parts.values import json_figures

MANIFEST = """\
manifest_version: 1
release:
  name: {name}
  version: 1.0.0
graph:
  path: model.onnx
  producer: {{tool: onnx.helper, version: "1.23", settings: {{opset: 17}}}}
inputs:
  - name: x
    dtype: float32
    shape: [1, 4]
    meaning: tensor
    preprocessing: {{kind: custom, description: sensor readings passed as they are}}
outputs:
  - name: y
    dtype: float32
    shape: [1, 4]
    meaning: embedding
runtime:
  name: onnxruntime
  version: ">=1.17,<2"
{validation}comparison:
  reference: {{description: "NumPy: x * 2"}}
  cases:
    - name: ones
      tags: [ordinary]
      inputs: {{x: cases/ones/x.npy}}
      expected: {{y: cases/ones/y.npy}}
    - name: extremes
      tags: [edge]
      inputs: {{x: cases/extremes/x.npy}}
      expected: {{y: cases/extremes/y.npy}}
  rules:
    - {{output: y, check: allclose, atol: 1.0e-5, rtol: 1.0e-3}}
    - {{output: y, check: max_abs, max: 1.0e-4}}
"""
VALIDATION = "validation:\n  command: checker verify bundle.yaml\n"


def doubler() -> onnx.ModelProto:
    two = numpy_helper.from_array(np.array([2.0], dtype=np.float32), "two")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y"])],
        "doubler",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [two],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnx.helper")
    model.ir_version = 8
    return model


def make_bundle(root: Path, name: str = "tiny-doubler", complete: bool = True) -> Path:
    """A bundle that passes; without `complete`, its validation command is missing (a failing bundle)."""
    root.mkdir(parents=True, exist_ok=True)
    onnx.save(doubler(), root / "model.onnx")
    cases = {"ones": np.ones((1, 4)), "extremes": np.array([[-1e3, -1e-3, 0.0, 1e3]])}
    for case, x in cases.items():
        (root / "cases" / case).mkdir(parents=True, exist_ok=True)
        np.save(root / "cases" / case / "x.npy", x.astype(np.float32))
        np.save(root / "cases" / case / "y.npy", (x * 2).astype(np.float32))
    text = MANIFEST.format(name=name, validation=VALIDATION if complete else "")
    (root / "bundle.yaml").write_text(text, encoding="utf-8")
    return root


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "github"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"  # the pull request's head commit in the event fixtures


def load_event(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "events" / f"{name}.json").read_text(encoding="utf-8"))
    return data


def sample_json(*, failing: bool = True, name: str = "mobilenet-v2", findings: int = 0) -> dict[str, Any]:
    """The report as `checker verify --format json` writes it."""
    return dict(json_figures(sample_report(failing=failing, name=name, findings=findings).to_dict()))


def sample_report(*, failing: bool = True, name: str = "mobilenet-v2", findings: int = 0) -> Report:
    """A report as `checker verify` makes it, built from the report model itself."""
    bundle = BundleReport(
        path="models/mobilenet/bundle.yaml",
        manifest_file="bundle.yaml",
        name=name,
        version="2.1.0",
        digest="sha256:" + "ab" * 32,
        pieces={
            p: True for p in ("graph", "external_weights", "preprocessing", "labels", "comparison_inputs", "runtime")
        },
    )
    bundle.pieces["validation_command"] = not failing
    if failing:
        bundle.add(
            [
                error(
                    "bundle.missing_piece",
                    "validation.command is not given",
                    "bundle.yaml",
                    30,
                    piece="validation_command",
                )
            ]
        )
    bundle.add(
        [warning("graph.producer", "graph.producer is absent", "bundle.yaml", 8), info("validation.not_run", "not run")]
    )
    bundle.add(error("manifest.schema", f"field {i} is wrong", "bundle.yaml", 40 + i) for i in range(findings))
    rules = [
        RuleResult(
            "logits",
            "allclose",
            {"atol": 1e-4, "rtol": 1e-3},
            True,
            1.0,
            1.0,
            "cat",
            2e-5,
            1e-4,
            2e-5,
            "max",
            {"cat": 2e-5},
        ),
        RuleResult("logits", "topk", {"k": 5}, True, 1.0, 1.0, "dog", 1.0, 1.0, 1.0, "min", {"dog": 1.0}),
    ]
    bundle.comparisons.append(Comparison("baseline", "reference", rules))
    return Report(
        "0.1.0",
        [bundle],
        environment={"checker": "0.1.0", "onnxruntime": "1.32.0", "python": "3.11.7", "platform": "Linux x86_64"},
    )
