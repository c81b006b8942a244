"""Which platform is right, when two disagree: a float64 reference, the first node where they part, and a
reproduction folder to attach to an upstream issue.

The reference runs the graph as mathematics, not as any runtime's kernels: onnx's reference evaluator (NumPy) on a
copy of the graph upcast to float64 (every float initializer, constant, cast and declared type; the graph
converted to opset 21 when the evaluator lacks an operator's older version). The side farther from it on the
failing case's output is the wrong one, by how much is said for both.

Where they part: the graph with every floating intermediate tensor exposed as an output, at optimization level
disabled so that every tensor survives, run on both platforms on that case; the first tensor, in graph order,
whose SQNR between the two falls below 30 dB is made by the node where they part. Its smallest subgraph (that
node alone, its other inputs as graph inputs fed with this machine's values) is run on both again: when it still
shows the difference it is the reproduction, else the whole graph is. A device's outputs hold no intermediate
tensors, so its reproduction is the whole graph.

The reproduction folder holds the (sub)graph, its inputs, each side's outputs and the float64 ones, and
repro.json with the versions and fingerprints, and a README that reruns it with plain onnxruntime.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from checker import __version__
from checker.compare.metrics import sqnr_db
from checker.compare.session import CaseRunError, Runtime, SessionError, open_session, run_case
from checker.errors import first_line
from checker.readers.deviceoutputs import stem

if TYPE_CHECKING:
    import onnx

MIN_DB = 30.0  # below this SQNR between the two platforms a tensor has parted
MAX_MODEL_BYTES = 1 << 30  # a graph larger than this is not copied or exposed: the reproduction names it instead
BUDGET_BYTES = 256 << 20  # exposed tensors per run
OPSET = 21  # what the reference evaluator implements every operator of
_FLOATS = (1, 10, 16)  # float, float16, bfloat16
_DOUBLE = 11
Opener = Callable[[Path, Runtime, int], Any]


@dataclass
class Side:
    """One platform's way to run graphs: its opener and runtime, or outputs only (a device)."""

    label: str  # "platform browser-webgpu"
    name: str  # the platform's name: browser-webgpu
    opener: Opener
    runtime: Runtime
    runs_graphs: bool  # False: a device's outputs, which answer the cases only
    fingerprint: dict[str, Any] = field(default_factory=dict)
    model: onnx.ModelProto | None = None  # the graph this side runs, when not the shipped one


@dataclass
class Settled:
    """What the float64 reference says about one disagreement, and where the reproduction is."""

    graph: str
    case: str
    output: str
    reference: str  # how the float64 outputs were computed, or why they were not
    there_error: float | None = None  # max |platform - float64| on the output
    here_error: float | None = None  # max |this machine - float64|
    node: str | None = None
    op_type: str | None = None
    sqnr_db: float | None = None  # between the two platforms on the node's output
    subgraph: str = "graph"  # "node": the node alone shows it; "graph": the whole graph is the reproduction
    folder: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def wrong(self) -> str | None:
        """ "platform" or "this machine": the side farther from the float64 outputs; None when unknown or even."""
        if self.there_error is None or self.here_error is None or self.there_error == self.here_error:
            return None
        return "platform" if self.there_error > self.here_error else "this machine"

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph, "case": self.case, "output": self.output, "reference": self.reference,
            "wrong": self.wrong, "platform_error": self.there_error, "native_error": self.here_error,
            "node": self.node, "op_type": self.op_type, "sqnr_db": self.sqnr_db, "subgraph": self.subgraph,
            "reproduction": None if self.folder is None else str(self.folder), "notes": self.notes,
        }  # fmt: skip


def upcast(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the graph computing in float64: float initializers, constants, casts and declared types."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graphs = [out.graph]
    while graphs:
        graph = graphs.pop()
        for i, tensor in enumerate(graph.initializer):
            if tensor.data_type in _FLOATS:
                graph.initializer[i].CopyFrom(_double(tensor))
        for node in graph.node:
            for attr in node.attribute:
                if attr.name == "to" and attr.i in _FLOATS:
                    attr.i = _DOUBLE
                if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type in _FLOATS:
                    attr.t.CopyFrom(_double(attr.t))
                if attr.type == onnx.AttributeProto.GRAPH:
                    graphs.append(attr.g)
        for value in (*graph.input, *graph.output, *graph.value_info):
            if value.type.tensor_type.elem_type in _FLOATS:
                value.type.tensor_type.elem_type = _DOUBLE
    return out


def _double(tensor: Any) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name)


def reference64(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], str]:
    """The graph's outputs in float64 by onnx's reference evaluator, and how they were made; a RuntimeError says
    why they could not be."""
    from onnx import version_converter
    from onnx.reference import ReferenceEvaluator

    feed = {k: (v.astype(np.float64) if v.dtype.kind == "f" else v) for k, v in inputs.items()}
    how = "onnx's reference evaluator on the graph upcast to float64"
    attempts: list[tuple[Callable[[], onnx.ModelProto], str]] = [
        (lambda: upcast(model), how),
        (lambda: upcast(version_converter.convert_version(model, OPSET)), f"{how} (converted to opset {OPSET})"),
    ]
    problem = ""
    for make, said in attempts:
        try:
            evaluator = ReferenceEvaluator(make())
            names = [o.name for o in model.graph.output]
            values = evaluator.run(None, {k: v for k, v in feed.items() if k in evaluator.input_names})
            return dict(zip(names, (np.asarray(v) for v in values), strict=True)), said
        except Exception as exc:  # the evaluator and the converter raise many kinds: each attempt is a try
            problem = first_line(exc)
    raise RuntimeError(f"no float64 reference could be computed: {problem}")


def _error(a: np.ndarray | None, ref: np.ndarray | None) -> float | None:
    if a is None or ref is None or a.size != ref.size or a.dtype.kind not in "fiu":
        return None
    with np.errstate(all="ignore"):
        return float(np.max(np.abs(a.astype(np.float64).reshape(ref.shape) - ref.astype(np.float64)), initial=0.0))


def settle(
    model_path: Path,
    model: onnx.ModelProto,
    graph: str,
    case: Any,
    output: str,
    there: Side,
    here: Runtime,
    root: Path,
    release: Mapping[str, Any],
    timeout: float = 600.0,
) -> Settled:
    """Run the case on both sides and against the float64 reference, find where they part, write the folder."""
    found = Settled(graph, case.name, output, "")
    try:
        mine = run_case(open_session(model_path, here), case.inputs, timeout)
        theirs = run_case(there.opener(model_path, there.runtime, 0), case.inputs, timeout)
    except (SessionError, CaseRunError) as exc:
        found.reference = "not computed: the case did not run on both sides"
        found.notes.append(str(exc))
        return found
    try:
        reference, found.reference = reference64(model, case.inputs)
        found.there_error = _error(theirs.get(output), reference.get(output))
        found.here_error = _error(mine.get(output), reference.get(output))
    except RuntimeError as exc:
        reference, found.reference = {}, str(exc)
    folder = root / stem(release.get("name") or "release") / f"{stem(there.name)}-{stem(graph)}-{stem(case.name)}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    found.folder = folder
    node = _parting(model, there, here, case.inputs, found) if there.runs_graphs else None
    if there.runs_graphs is False:
        found.notes.append("a device's outputs hold no intermediate tensors: the reproduction is the whole graph")
    if node is not None and _node_repro(model, node, there, here, case.inputs, folder, found):
        found.subgraph = "node"
    else:
        _graph_repro(model, model_path, case.inputs, {"platform": theirs, "native": mine, "float64": reference},
                     folder, found)  # fmt: skip
    _describe(folder, found, there, release, graph)
    return found


def _exposable(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> list[tuple[str, Any]]:
    """(tensor, its node) for every floating node output, in graph order."""
    from checker.compare.divergence import tensor_sizes

    sizes = tensor_sizes(model, inputs)
    out = []
    for node in model.graph.node:
        for name in node.output:
            if name and sizes.get(name, (0, None))[0] in (*_FLOATS, _DOUBLE, 0):
                out.append((name, node))
    return out


def _weights(model: onnx.ModelProto) -> int:
    return sum(t.ByteSize() for t in model.graph.initializer)


def _exposed(model: onnx.ModelProto, names: list[str]) -> bytes:
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    have = {o.name for o in copy.graph.output}
    for name in names:
        if name not in have:
            copy.graph.output.append(onnx.ValueInfoProto(name=name))
    return bytes(copy.SerializeToString())


def _run_bytes(
    side: Side | None, data: bytes, runtime: Runtime, inputs: Mapping[str, np.ndarray], work: Path
) -> dict[str, np.ndarray]:
    """A serialized graph run here (side None) or on the side's platform (from a file it can read)."""
    plain = Runtime(runtime.providers, {**runtime.options, "graph_optimization_level": "disabled"})
    if side is None:
        session = open_session(data, plain)
    else:
        path = work / f"graph-{len(list(work.iterdir()))}.onnx"
        path.write_bytes(data)
        session = side.opener(path, plain, 0)
    names = [i.name for i in session.get_inputs()]
    return run_case(session, {n: inputs[n] for n in names if n in inputs})


def _parting(
    model: onnx.ModelProto, there: Side, here: Runtime, inputs: Mapping[str, np.ndarray], found: Settled
) -> Any:
    """The node whose output is the first, in graph order, to part between the two platforms; None when none
    does at optimization level disabled (the difference then lies in a fused kernel)."""
    if _weights(model) > MAX_MODEL_BYTES:
        found.notes.append("the graph is too large to expose its intermediate tensors here")
        return None
    theirs_model = there.model or model
    tensors = _exposable(model, inputs)
    with tempfile.TemporaryDirectory(prefix="checker-settle-") as work:
        for group in _groups(tensors, inputs, model):
            names = [name for name, _ in group]
            try:
                mine = _run_bytes(None, _exposed(model, names), here, inputs, Path(work))
                theirs = _run_bytes(there, _exposed(theirs_model, names), there.runtime, inputs, Path(work))
            except (SessionError, CaseRunError, RuntimeError) as exc:
                found.notes.append(f"the intermediate tensors could not be compared: {first_line(exc)}")
                return None
            for name, node in group:
                a, b = theirs.get(name), mine.get(name)
                if a is None or b is None or a.shape != b.shape or a.dtype.kind != "f" or b.dtype.kind != "f":
                    continue
                with np.errstate(all="ignore"):
                    figure = sqnr_db(a, b)
                if figure < MIN_DB:
                    found.node, found.op_type, found.sqnr_db = node.name or name, node.op_type, round(figure, 3)
                    return node
    found.notes.append(f"every intermediate tensor stays above {MIN_DB:g} dB at optimization level disabled")
    return None


def _groups(
    tensors: list[tuple[str, Any]], inputs: Mapping[str, np.ndarray], model: onnx.ModelProto
) -> list[list[tuple[str, Any]]]:
    from checker.compare.divergence import tensor_sizes

    sizes = tensor_sizes(model, inputs)
    out: list[list[tuple[str, Any]]] = [[]]
    total = 0
    for item in tensors:
        size = sizes.get(item[0], (0, None))[1] or (1 << 20)
        if out[-1] and total + size > BUDGET_BYTES:
            out.append([])
            total = 0
        out[-1].append(item)
        total += size
    return [g for g in out if g]


def _subgraph(model: onnx.ModelProto, node: Any, values: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """The node alone: its initializers kept, its other inputs graph inputs typed by the values fed to them."""
    import onnx
    from onnx import helper

    weights = {t.name: t for t in model.graph.initializer}
    inputs, initializers = [], []
    for name in node.input:
        if not name:
            continue
        if name in weights:
            initializers.append(weights[name])
        else:
            value = values[name]
            kind = helper.np_dtype_to_tensor_dtype(value.dtype)
            inputs.append(helper.make_tensor_value_info(name, kind, value.shape))
    outputs = [onnx.ValueInfoProto(name=o) for o in node.output if o]
    graph = helper.make_graph([node], f"{node.op_type}-{node.name or 'node'}", inputs, outputs, initializers)
    made: onnx.ModelProto = helper.make_model(
        graph, opset_imports=list(model.opset_import), ir_version=model.ir_version
    )
    return made


def _node_repro(
    model: onnx.ModelProto,
    node: Any,
    there: Side,
    here: Runtime,
    inputs: Mapping[str, np.ndarray],
    folder: Path,
    found: Settled,
) -> bool:
    """The node alone, fed this machine's values of its inputs: written when it still shows the difference."""
    needed = [n for n in node.input if n and n not in {t.name for t in model.graph.initializer}]
    inner = [n for n in needed if n not in inputs]
    with tempfile.TemporaryDirectory(prefix="checker-settle-") as work:
        try:
            values = _run_bytes(None, _exposed(model, inner), here, inputs, Path(work)) if inner else {}
            feed = {n: (inputs[n] if n in inputs else values[n]) for n in needed}
            small = _subgraph(model, node, feed)
            theirs_small = _subgraph(there.model, _twin(there.model, node), feed) if there.model is not None else small
            mine = _run_bytes(None, small.SerializeToString(), here, feed, Path(work))
            theirs = _run_bytes(there, theirs_small.SerializeToString(), there.runtime, feed, Path(work))
        except (SessionError, CaseRunError, RuntimeError, KeyError) as exc:
            found.notes.append(f"the node alone could not be run on both sides: {first_line(exc)}")
            return False
    with np.errstate(all="ignore"):
        shows = any(
            name in theirs and mine[name].dtype.kind == "f" and sqnr_db(theirs[name], mine[name]) < MIN_DB
            for name in mine
        )
    if not shows:
        found.notes.append(f"node '{found.node}' alone, fed this machine's inputs, agrees on both sides")
        return False
    try:
        reference, _ = reference64(small, feed)
    except RuntimeError:
        reference = {}
    _write(folder, small, feed, {"platform": theirs, "native": mine, "float64": reference})
    return True


def _twin(model: onnx.ModelProto, node: Any) -> Any:
    """The node of the same name (or the same outputs) in the graph the platform runs."""
    for other in model.graph.node:
        if (node.name and other.name == node.name) or list(other.output) == list(node.output):
            return other
    raise KeyError(f"the platform's graph has no node '{node.name}'")


def _graph_repro(
    model: onnx.ModelProto,
    path: Path,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, Mapping[str, np.ndarray]],
    folder: Path,
    found: Settled,
) -> None:
    if _weights(model) > MAX_MODEL_BYTES:
        found.notes.append(f"the graph is too large to copy into the reproduction: attach {path.name} itself")
        _write(folder, None, inputs, outputs)
        return
    _write(folder, model, inputs, outputs)


def _write(
    folder: Path,
    model: onnx.ModelProto | None,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, Mapping[str, np.ndarray]],
) -> None:
    if model is not None:
        (folder / "model.onnx").write_bytes(model.SerializeToString())
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    for name, value in inputs.items():
        np.save(folder / "inputs" / f"{stem(name)}.npy", value)
    for side, values in outputs.items():
        (folder / "outputs" / side).mkdir(parents=True, exist_ok=True)
        for name, value in values.items():
            np.save(folder / "outputs" / side / f"{stem(name)}.npy", np.asarray(value))


_README = """# Reproduction: {graph} on {platform}, case {case}

{summary}

Rerun with plain onnxruntime (NumPy and onnxruntime only):

```python
import glob, os
import numpy as np
import onnxruntime as ort

session = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
feed = {{os.path.basename(p)[:-4]: np.load(p) for p in glob.glob("inputs/*.npy")}}
for output, value in zip([o.name for o in session.get_outputs()], session.run(None, feed)):
    there = np.load(f"outputs/platform/{{output}}.npy")
    print(output, "largest difference from the platform's:", float(np.abs(value - there).max()))
```

repro.json holds the versions, the fingerprint of each side and the figures.
"""


def _describe(folder: Path, found: Settled, there: Side, release: Mapping[str, Any], graph: str) -> None:
    import onnxruntime

    said = {
        "made_by": f"onnx-release-checker {__version__}",
        "release": dict(release),
        "graph": graph,
        "platform": there.label,
        "platform_fingerprint": there.fingerprint,
        "native": {"onnxruntime": onnxruntime.__version__},
        **found.to_dict(),
    }
    said.pop("reproduction", None)
    (folder / "repro.json").write_text(json.dumps(said, indent=2, default=str) + "\n", encoding="utf-8")
    (folder / "README.md").write_text(
        _README.format(graph=graph, platform=there.label, case=found.case, summary=words(found)), encoding="utf-8"
    )


def words(found: Settled) -> str:
    """The finding's sentence: which side is off against the float64 reference, where they part."""
    if found.there_error is None or found.here_error is None:
        side = f"no float64 reference: {found.reference}"
    else:
        who = {"platform": "the platform is off", "this machine": "this machine is off", None: "both are as far"}
        side = (
            f"against a float64 reference ({found.reference}) on '{found.output}', {who[found.wrong]}: the platform "
            f"by up to {found.there_error:.4g}, this machine by up to {found.here_error:.4g}"
        )
    if found.node is not None:
        where = f"; they part first at node '{found.node}' ({found.op_type}, {found.sqnr_db:.1f} dB between them)"
    else:
        where = ""
    repro = "the node alone" if found.subgraph == "node" else "the whole graph"
    return f"{side}{where}; the reproduction ({repro}) is in {found.folder}"
