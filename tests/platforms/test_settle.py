"""Which platform is right: a planted disagreement (the other platform runs an edited graph, as a runtime with one
wrong kernel would) is settled against a float64 reference, the node where the two part is named, and the
reproduction folder's subgraph, run by plain onnxruntime, still shows it. Nothing depends on this CPU: the plant
is a node whose weights differ on one side."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from enginekit import JS, cached, needs_node
from modelkit import classifier, classifier_cases

from checker.checks.comparison import Opener
from checker.compare.session import CPU, Runtime
from checker.platforms import npm
from checker.platforms.settle import Side, reference64, settle, upcast, words
from checker.runtimes.remote import Worker, remote_opener


def _worker(kind: str) -> Worker:
    if kind == "python":
        return Worker(Path(sys.executable), "platform here", 600.0)
    return Worker(Path(), "platform node", 600.0, command=["node", str(JS / "node.mjs"), str(cached(npm.NODE))])


def _substituting(opener: Opener, shipped: Path, edited: Path) -> Opener:
    def open_instead(path: Path, runtime: Runtime, weight_bytes: int) -> Any:
        return opener(edited if path == shipped else path, runtime, weight_bytes)

    return open_instead


@pytest.mark.parametrize("kind", ["python", pytest.param("node", marks=needs_node)])
def test_a_planted_disagreement_is_settled_and_reproduced_by_its_node_alone(kind: str, tmp_path: Path) -> None:
    shipped, edited = tmp_path / "model.onnx", tmp_path / "edited.onnx"
    model, wrong = classifier(spatial="side"), classifier(spatial="side", perturb="conv2")
    onnx.save(model, str(shipped))
    onnx.save(wrong, str(edited))
    case = classifier_cases(model, count=1)[0]
    worker = _worker(kind)
    try:
        runtime = Runtime([CPU] if kind == "python" else ["cpu"], {})
        side = Side(f"platform {kind}", kind, _substituting(remote_opener(worker), shipped, edited), runtime, True,
                    {"engine": kind}, model=wrong)  # fmt: skip
        found = settle(shipped, model, "baseline", case, "logits", side, Runtime([CPU], {}), tmp_path / "repro",
                       {"name": "tiny"})  # fmt: skip
    finally:
        worker.close()
    assert found.wrong == "platform"
    assert found.here_error is not None and found.there_error is not None
    assert found.here_error < 1e-4 < found.there_error
    assert found.node == "conv2" and found.op_type == "Conv" and found.subgraph == "node"
    assert "they part first at node 'conv2' (Conv" in words(found) and "the platform is off" in words(found)
    folder = found.folder
    assert folder is not None and (folder / "repro.json").is_file() and (folder / "README.md").is_file()
    # The subgraph is the node alone; plain onnxruntime on it gives this machine's outputs, not the platform's.
    sub = onnx.load(str(folder / "model.onnx"))
    assert [n.name for n in sub.graph.node] == ["conv2"]
    feed = {p.stem: np.load(p) for p in (folder / "inputs").glob("*.npy")}
    [value] = ort.InferenceSession(str(folder / "model.onnx"), providers=[CPU]).run(None, feed)
    name = sub.graph.output[0].name
    there, native = (
        np.load(folder / "outputs/platform" / f"{name}.npy"),
        np.load(folder / "outputs/native" / f"{name}.npy"),
    )
    assert np.abs(value - native).max() < 1e-4
    assert np.abs(value - there).max() > 0.1 * np.abs(native).max()  # it still shows the disagreement
    reference = np.load(folder / "outputs/float64" / f"{name}.npy")
    assert reference.dtype == np.float64 and np.abs(reference - native).max() < 1e-4


def test_the_float64_reference_is_the_graph_s_mathematics() -> None:
    model = classifier(spatial="side")
    case = classifier_cases(model, count=1)[0]
    outputs, how = reference64(model, case.inputs)
    assert "float64" in how and outputs["logits"].dtype == np.float64
    assert np.abs(outputs["logits"] - case.expected["logits"]).max() < 1e-4
    assert all(t.data_type == onnx.TensorProto.DOUBLE for t in upcast(model).graph.initializer)
