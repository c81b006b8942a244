"""Helpers for the release tests: real graphs to start bundles from, and a verify run read as JSON."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from ruamel.yaml import YAML

PYTORCH_CONVERTED = Path(onnx.__file__).parent / "backend" / "test" / "data" / "pytorch-converted"
PLACEHOLDER_PIECES = {
    "preprocessing": "preprocessing",
    "labels": "labels",
    "comparison.reference": "comparison_inputs",
    "comparison.cases": "comparison_inputs",
    "comparison.rules": "comparison_inputs",
    "validation.command": "validation_command",
    "runtime.version": "runtime",
}

Cli = Callable[..., tuple[int, str, str]]


def converted(name: str, dest: Path) -> Path:
    """A copy of one of the ONNX package's pytorch-converted test models, with its test data."""
    shutil.copytree(PYTORCH_CONVERTED / name, dest / name)
    return dest / name


def classifier(labels: list[str] | None = None, producer: str = "torch.onnx") -> onnx.ModelProto:
    """An image classifier: pixels [batch, 3, 8, 8] -> logits [batch, 4], class names in its metadata."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("GlobalAveragePool", ["pixel_values"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"]),
        helper.make_node("Gemm", ["flat", "w"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "classifier",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 4])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.producer_name, model.producer_version = producer, "2.5.1" if producer else ""
    if labels is not None:
        helper.set_model_props(model, {"names": repr(dict(enumerate(labels)))})
    return model


def verify_json(cli: Cli, path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("verify", path, "--format", "json", "--no-progress", *extra)
    assert "Traceback" not in err, err
    return code, json.loads(out)["bundles"][0]


def ids(bundle: dict[str, Any], severity: str | None = None) -> list[str]:
    return [f["id"] for f in bundle["findings"] if severity is None or f["severity"] == severity]


def missing_pieces(bundle: dict[str, Any]) -> list[str]:
    return sorted(f["details"]["piece"] for f in bundle["findings"] if f["id"] == "bundle.missing_piece")


def expected_pieces(placeholders: list[str]) -> list[str]:
    """The missing pieces a list of placeholders should produce, one finding per piece and place."""
    out = []
    for placeholder in placeholders:
        key = placeholder.rpartition(": ")[2] if ": " in placeholder else placeholder
        if key in PLACEHOLDER_PIECES:
            out.append(PLACEHOLDER_PIECES[key])
    # The comparison's three placeholders are one finding about one piece.
    if out.count("comparison_inputs") > 1:
        out = [p for p in out if p != "comparison_inputs"] + ["comparison_inputs"]
    return sorted(out)


def edit(manifest: Path, change: Callable[[Any], None]) -> None:
    """Change the manifest with a round-trip YAML edit, as a person with an editor would."""
    yaml = YAML(typ="rt")
    tree = yaml.load(manifest.read_text(encoding="utf-8"))
    change(tree)
    with manifest.open("w", encoding="utf-8") as handle:
        yaml.dump(tree, handle)


def complete(tree: Any, rules: list[dict[str, Any]], preprocessing: dict[str, Any] | None = None) -> None:
    """Fill in what `checker init` leaves as placeholders (the cases come from `checker case add`)."""
    prep = preprocessing or {"kind": "custom", "description": "a tensor made by the test"}
    for entry in tree["inputs"]:
        entry["preprocessing"] = dict(prep)
    tree["validation"] = {"command": "checker verify bundle.yaml"}
    tree["comparison"]["reference"] = {"description": "the test's own reference"}
    tree["comparison"]["rules"] = rules
