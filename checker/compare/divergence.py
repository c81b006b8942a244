"""Where a variant diverges from the baseline: intermediate tensors compared on one case.

In the manner of onnxruntime.quantization.qdq_loss_debug: both graphs expose their intermediate tensors as
outputs, tensors are matched by name across the QDQ rewrite (the variant's `X_DequantizeLinear_Output` is what
its next node sees of the baseline's `X`), and each pair is scored by its SQNR. Tensors are exposed in bounded
groups, one pair of sessions per group, so a graph with many large tensors never holds them all at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from checker.compare.matching import GRAPH_INPUT, Produced, match_tensors
from checker.compare.metrics import SQNR_CAP_DB, sqnr_db
from checker.compare.session import CaseRunError, Runtime, SessionError, open_session, timed_run, weight_bytes
from checker.errors import first_line
from checker.reports.parts.judged import Diagnosis as Diagnosed
from checker.reports.parts.judged import TensorScore

if TYPE_CHECKING:
    import onnx

DEFAULT_MIN_DB = 30.0  # the sqnr check's default: below it a tensor counts as diverging
DROP_DB = 6.0  # a node whose output loses this much against its inputs introduces error itself
BUDGET_BYTES = 256 << 20  # exposed tensors per run, per graph
MAX_GROUP = 512
MAX_EXCLUDE = 32
_FLOAT_TYPES = {1, 10, 11, 16}  # float, float16, double, bfloat16


class DiagnosisError(RuntimeError):
    """The diagnosis could not run; the message says why."""


@dataclass(frozen=True)
class Scored:
    produced: Produced
    sqnr_db: float
    drop_db: float = 0.0  # how much worse than the node's worst input

    def record(self) -> TensorScore:
        p = self.produced
        return TensorScore(
            p.tensor, p.variant_tensor, p.node or None, p.op_type, list(p.exclude),
            round(self.sqnr_db, 3), round(self.drop_db, 3),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return self.record().to_dict()


@dataclass
class Diagnosis:
    variant: str
    case: str
    min_db: float
    scored: list[Scored] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    groups: int = 0
    # Baseline nodes the transform changed (quantized, replaced or fed quantized tensors); None: not known.
    changed: frozenset[str] | None = None

    @property
    def first(self) -> Scored | None:
        return next((s for s in self.scored if s.sqnr_db < self.min_db), None)

    @property
    def worst(self) -> Scored | None:
        return min(self.scored, key=lambda s: s.sqnr_db, default=None)

    def culprits(self) -> list[Scored]:
        """Nodes that fall below the threshold and lose at least DROP_DB against their own inputs."""
        found = [s for s in self.scored if s.sqnr_db < self.min_db and s.drop_db >= DROP_DB]
        first = self.first
        if first is not None and first not in found:
            found.append(first)
        return sorted(found, key=lambda s: -s.drop_db)

    def nodes_to_exclude(self) -> list[str]:
        """Baseline node names for onnxruntime.quantization's nodes_to_exclude, the largest drop first: only
        nodes the transform changed, since excluding one it left alone changes nothing."""
        names = dict.fromkeys(name for s in self.culprits() for name in s.produced.exclude)
        return [n for n in names if self.changed is None or n in self.changed][:MAX_EXCLUDE]

    def unnamed_culprits(self) -> int:
        return sum(1 for s in self.culprits() if not s.produced.exclude)

    def record(self) -> Diagnosed:
        """What the report keeps of it (a failed comparison's `diagnosis`)."""
        first, worst = self.first, self.worst
        return Diagnosed(
            variant=self.variant,
            case=self.case,
            min_db=self.min_db,
            compared=len(self.scored),
            unmatched=len(self.unmatched),
            groups=self.groups,
            first=first.record() if first else None,
            worst=worst.record() if worst else None,
            largest_drops=[s.record() for s in sorted(self.scored, key=lambda s: -s.drop_db)[:5]],
            nodes_to_exclude=self.nodes_to_exclude(),
            summary=self.summary(),
        )

    def to_dict(self, full: bool = False) -> dict[str, Any]:
        out = self.record().to_dict()
        if full:
            out["tensors"] = [s.to_dict() for s in self.scored]
            out["unmatched_tensors"] = self.unmatched
        return out

    def summary(self) -> str:
        head = f"{self.variant} against the baseline on case '{self.case}'"
        first, worst = self.first, self.worst
        if worst is None:
            return f"{head}: no intermediate tensor could be matched across the two graphs"
        if first is None:
            return (
                f"{head}: every one of {len(self.scored)} matched tensors stays above {self.min_db:g} dB "
                f"(the lowest is {_describe(worst)})"
            )
        text = f"{head}: the first tensor below {self.min_db:g} dB is {_describe(first)}"
        text += f"; the worst is {_describe(worst)}"
        exclude = self.nodes_to_exclude()
        if exclude:
            text += (
                f"; candidates to keep in float: nodes_to_exclude={exclude!r} (unmeasured: "
                "`checker diagnose --requantize` re-runs the transform and keeps only what helps)"
            )
        if self.unnamed_culprits():
            text += f" ({self.unnamed_culprits()} diverging node(s) have no name and cannot be excluded by name)"
        return text


def _describe(s: Scored) -> str:
    p = s.produced
    if p.op_type == GRAPH_INPUT:
        where = f"a graph input, quantized for {', '.join(repr(n) for n in p.exclude) or 'unnamed nodes'}"
    else:
        where = f"{f'node {p.node!r}' if p.node else 'an unnamed node'}, {p.op_type}"
    return f"'{p.tensor}' ({where}) at {s.sqnr_db:.1f} dB"


def tensor_sizes(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> dict[str, tuple[int, int | None]]:
    """name -> (element type, bytes or None), by shape inference with this case's input shapes."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(_shapes_only(model, inputs), strict_mode=False)
        return {v.name: _size_of(v) for v in (*inferred.graph.value_info, *inferred.graph.output)}
    except Exception:  # inference is only an estimate; the groups then adapt to what runs show
        return {}


_KEPT_VALUES = 1 << 16  # initializers up to this size keep their values: shapes and indices that inference reads


def _shapes_only(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """The model for shape inference: this case's input shapes, and large initializers as dims alone.

    Inference serializes the model it is given and hands a copy back; with the weights in, that is three copies
    of every weight at once. Weights only ever count by their dims here; the small initializers a Reshape or a
    Slice reads keep their values."""
    import onnx

    graph = onnx.GraphProto(name=model.graph.name)
    graph.node.extend(model.graph.node)
    graph.output.extend(model.graph.output)
    graph.value_info.extend(model.graph.value_info)
    for vi in model.graph.input:
        copy = graph.input.add()
        copy.CopyFrom(vi)
        if vi.name in inputs and vi.type.HasField("tensor_type"):
            del copy.type.tensor_type.shape.dim[:]
            for d in inputs[vi.name].shape:
                copy.type.tensor_type.shape.dim.add().dim_value = int(d)
    listed = {vi.name for vi in model.graph.input}  # before IR 4, initializers are graph inputs as well
    for tensor in model.graph.initializer:
        if tensor.ByteSize() <= _KEPT_VALUES:
            graph.initializer.append(tensor)
        elif tensor.name not in listed:  # a graph input of the same type and dims stands for it
            graph.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    out = onnx.ModelProto(ir_version=model.ir_version, graph=graph)
    out.opset_import.extend(model.opset_import)
    out.functions.extend(model.functions)
    return out


def _size_of(vi: onnx.ValueInfoProto) -> tuple[int, int | None]:
    tt = vi.type.tensor_type
    count = 1
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            return tt.elem_type, None
        count *= d.dim_value
    itemsize = 2 if tt.elem_type in (10, 16) else 8 if tt.elem_type == 11 else 4
    return tt.elem_type, count * itemsize if tt.HasField("shape") else None


def _candidates(matched: Sequence[Produced], sizes: Mapping[str, tuple[int, int | None]]) -> list[Produced]:
    """Only floating tensors: integer ones (shapes, indices) carry no quantization error to find."""
    return [p for p in matched if sizes.get(p.tensor, (1, None))[0] in _FLOAT_TYPES | {0}]


def groups(
    items: Sequence[Produced], sizes: Mapping[str, tuple[int, int | None]], seen: list[int]
) -> Iterator[list[Produced]]:
    """Consecutive groups that fit the byte budget; an unknown size counts as the largest seen so far."""
    group: list[Produced] = []
    total = 0
    for item in items:
        known = sizes.get(item.tensor, (0, None))[1]
        estimate = known if known is not None else max(seen, default=1 << 20)
        if group and (total + estimate > BUDGET_BYTES or len(group) >= MAX_GROUP):
            yield group
            group, total = [], 0
        group.append(item)
        total += estimate
    if group:
        yield group


def _expose(model: onnx.ModelProto, names: Sequence[str]) -> bytes:
    """The model serialized with `names` added as (untyped) outputs; the proto is left as it was."""
    import onnx

    existing = {o.name for o in model.graph.output}
    count = len(model.graph.output)
    for name in dict.fromkeys(names):
        if name not in existing:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    try:
        return bytes(model.SerializeToString())
    finally:
        del model.graph.output[count:]


def _fetch(
    model: onnx.ModelProto,
    folder: Path,
    names: Sequence[str],
    inputs: Mapping[str, np.ndarray],
    runtime: Runtime,
) -> dict[str, np.ndarray]:
    try:
        session = open_session(_expose(model, names), runtime, folder, weight_bytes(model))
        feed = {i.name: inputs[i.name] for i in session.get_inputs() if i.name in inputs}
        outputs = {o.name for o in session.get_outputs()}
        wanted = [n for n in dict.fromkeys(names) if n in outputs]
        values = timed_run(session, wanted, feed) if len(feed) == len(session.get_inputs()) else None
    except (SessionError, CaseRunError) as exc:
        raise DiagnosisError(str(exc)) from exc
    except Exception as exc:  # onnxruntime's errors share no base class beyond Exception
        raise DiagnosisError(first_line(exc)) from exc
    if values is None:
        raise DiagnosisError("the case does not give every input the graph needs")
    return dict(zip(wanted, values, strict=True))


def _score(p: Produced, base: Mapping[str, np.ndarray], var: Mapping[str, np.ndarray]) -> float | None:
    a, b = var.get(p.variant_tensor), base.get(p.tensor)
    if a is None or b is None or a.size != b.size or a.dtype.kind != "f" or b.dtype.kind != "f":
        return None
    with np.errstate(all="ignore"):
        return sqnr_db(a.reshape(b.shape), b)


def _with_drops(scored: list[Scored]) -> list[Scored]:
    by_tensor = {s.produced.tensor: s.sqnr_db for s in scored}
    out = []
    for s in scored:
        upstream = [by_tensor[i] for i in s.produced.inputs if i in by_tensor]
        worst_in = min(upstream, default=SQNR_CAP_DB)
        out.append(Scored(s.produced, s.sqnr_db, max(0.0, worst_in - s.sqnr_db)))
    return out


@dataclass
class Graphs:
    """The two graphs (loaded without external data) and the folders their external data lies in."""

    baseline: onnx.ModelProto
    baseline_folder: Path
    variant: onnx.ModelProto
    variant_folder: Path


def changed_nodes(baseline: onnx.ModelProto, variant: onnx.ModelProto) -> frozenset[str]:
    """Named baseline nodes the transform changed: gone from the variant (replaced or fused) or of another
    operator there; for a node with weights, its weights quantized or replaced; for one without, an input
    quantized (fed a DequantizeLinear output). A node with float weights that merely follows a quantized tensor
    (an excluded Gemm after a quantized Flatten) was not changed: excluding it changes nothing."""
    dequantized = {o for n in variant.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    twins = {n.name: n for n in variant.graph.node if n.name}
    base_weights = {t.name: t for t in baseline.graph.initializer}
    var_weights = {t.name: t for t in variant.graph.initializer}
    changed = set()
    for node in baseline.graph.node:
        twin = twins.get(node.name)
        if not node.name:
            continue
        if twin is None or twin.op_type != node.op_type:
            changed.add(node.name)
            continue
        weights = [i for i, name in enumerate(node.input) if name in base_weights]
        if weights:
            hit = any(
                i >= len(twin.input)
                or twin.input[i] in dequantized
                or var_weights.get(twin.input[i]) != base_weights[node.input[i]]
                for i in weights
            )
        else:
            hit = any(name in dequantized for name in twin.input)
        if hit:
            changed.add(node.name)
    return frozenset(changed)


def diagnose(
    graphs: Graphs,
    variant: str,
    case: str,
    inputs: Mapping[str, np.ndarray],
    runtime: Runtime,
    min_db: float = DEFAULT_MIN_DB,
) -> Diagnosis:
    """Score every matched intermediate tensor of `variant` against the baseline on one case."""
    matched, unmatched = match_tensors(graphs.baseline, graphs.variant)
    sizes = tensor_sizes(graphs.baseline, inputs)
    result = Diagnosis(
        variant, case, min_db, unmatched=unmatched, changed=changed_nodes(graphs.baseline, graphs.variant)
    )
    # As qdq_loss_debug does: no graph optimization, so every named tensor survives to be exposed.
    plain = Runtime(runtime.providers, {**runtime.options, "graph_optimization_level": "disabled"})
    seen: list[int] = []
    for group in groups(_candidates(matched, sizes), sizes, seen):
        inner = [p.tensor for p in group if p.op_type != GRAPH_INPUT]
        base = _fetch(graphs.baseline, graphs.baseline_folder, inner, inputs, plain) if inner else {}
        base.update({p.tensor: inputs[p.tensor] for p in group if p.op_type == GRAPH_INPUT and p.tensor in inputs})
        var = _fetch(graphs.variant, graphs.variant_folder, [p.variant_tensor for p in group], inputs, plain)
        seen.append(max((a.nbytes for a in (*base.values(), *var.values())), default=0))
        result.groups += 1
        for p in group:
            figure = _score(p, base, var)
            if figure is None:
                result.unmatched.append(p.tensor)
            else:
                result.scored.append(Scored(p, figure))
        del base, var
    result.scored = _with_drops(sorted(result.scored, key=lambda s: s.produced.order))
    return result
