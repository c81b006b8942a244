"""Dynamic axes proven: a graph that declares a symbolic batch but fixes batch 1 inside (a real Reshape) fails."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml
from bundlekit import linear_model, manifest, write_bundle
from onnx import helper, numpy_helper

from checker import findings as F
from checker.context import Options
from checker.verify import verify_bundle


def reshaped_model(target: list[int]) -> onnx.ModelProto:
    """y = reshape(x @ W + b, target) with inputs and outputs declared [batch, ...]: batch 1 is hard-coded."""
    model = linear_model()
    graph = model.graph
    graph.node[-1].output[0] = "pre"
    graph.initializer.append(numpy_helper.from_array(np.array(target, np.int64), "fixed_shape"))
    graph.node.append(helper.make_node("Reshape", ["pre", "fixed_shape"], ["y"], name="flatten_batch1"))
    return model


def batch1_bundle(root: Path, model: onnx.ModelProto) -> Path:
    """Three cases of batch 1 each, as a release made with one example at a time would hold."""
    root = write_bundle(root, linear_model(), manifest())
    onnx.save(model, str(root / "model.onnx"))
    init = {t.name: numpy_helper.to_array(t) for t in linear_model().graph.initializer}
    rng = np.random.default_rng(3)
    for i in range(3):
        x = rng.standard_normal((1, 4)).astype(np.float32)
        np.save(root / f"cases/x{i}.npy", x)
        np.save(root / f"cases/y{i}.npy", (x @ init["W"] + init["b"]).astype(np.float32))
    return root


def dynamic_findings(root: Path) -> tuple[list[F.Finding], str]:
    report = verify_bundle(root, Options())
    return [f for f in report.findings if f.id == F.GRAPH_DYNAMIC_AXES], report.status()


@pytest.mark.parametrize("target", [[1, 3], [1, -1]])
def test_a_reshape_fixing_batch_one_fails(tmp_path: Path, target: list[int]) -> None:
    root = batch1_bundle(tmp_path / "b", reshaped_model(target))
    found, status = dynamic_findings(root)
    assert len(found) == 1 and status == "fail"
    message = found[0].message
    assert "dim 'batch' ('x' axis 0)" in message and "cases 'c0' and 'c1' stacked" in message
    assert f"node 'flatten_batch1' (Reshape to {target}) fixes its size" in message
    line = (root / "bundle.yaml").read_text().splitlines()[found[0].line - 1]
    assert line.strip().startswith("shape:")
    assert found[0].details["axis"] == "batch"


def test_every_case_alone_passes_the_comparison(tmp_path: Path) -> None:
    """What the stacked pass adds: without it, the hard-coded batch goes unseen."""
    root = batch1_bundle(tmp_path / "b", reshaped_model([1, 3]))
    report = verify_bundle(root, Options())
    assert [c.status for c in report.comparisons] == ["pass"]


def test_a_truly_dynamic_batch_passes(tmp_path: Path) -> None:
    root = batch1_bundle(tmp_path / "b", linear_model())
    found, status = dynamic_findings(root)
    assert found == [] and status == "pass"


def test_an_axis_the_manifest_fixes_is_not_stacked(tmp_path: Path) -> None:
    root = batch1_bundle(tmp_path / "b", reshaped_model([1, 3]))
    data = yaml.safe_load((root / "bundle.yaml").read_text())
    data["inputs"][0]["shape"] = [1, 4]  # the release says: batch 1 only
    data["outputs"][0]["shape"] = [1, 3]
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    found, _ = dynamic_findings(root)
    assert found == []


def test_a_symbolic_axis_without_a_name_is_stacked_too(tmp_path: Path) -> None:
    model = reshaped_model([1, 3])
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].Clear()  # unnamed dynamic dim
    root = batch1_bundle(tmp_path / "b", model)
    found, _ = dynamic_findings(root)
    assert len(found) == 1 and "'x' axis 0" in found[0].message
