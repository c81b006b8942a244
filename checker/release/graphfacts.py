"""What `checker init` can learn from a graph file: its inputs, outputs, opsets, producer, weights and labels."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from checker.bundle.paths import BundlePathError, check_relative
from checker.errors import Error
from checker.readers.graphinfo import ExternalRef, TensorSpec, external_refs, graph_inputs, graph_outputs, opsets
from checker.readers.labelfiles import LabelError, from_metadata

MAX_GRAPH_BYTES = 2 << 30  # protobuf's limit for one message; larger weights must be external data
# Metadata keys that exporters use for class names (Ultralytics: names; Hugging Face: id2label), in preference order.
LABEL_KEYS = ("labels", "names", "class_names", "classes", "id2label", "categories")


class GraphReadError(Error):
    """The model file cannot be read as an ONNX graph."""


@dataclass(frozen=True)
class MetadataLabels:
    key: str
    labels: list[str]


@dataclass
class GraphFacts:
    ir_version: int
    opsets: dict[str, int]
    producer_name: str
    producer_version: str
    description: str
    model_version: int
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    external: list[str] = field(default_factory=list)  # locations, relative to the graph's folder
    labels: MetadataLabels | None = None
    # The graph's metadata_props (short values only): Ultralytics' task, imgsz and stride tell what a detector is.
    metadata: dict[str, str] = field(default_factory=dict)


def read_graph(path: Path) -> GraphFacts:
    return graph_facts(load_model(path), path.name)


def graph_facts(model: Any, name: str) -> GraphFacts:
    """What a parsed graph says; `name` is its file's, for messages."""
    return GraphFacts(
        ir_version=int(model.ir_version),
        opsets=opsets(model),
        producer_name=str(model.producer_name),
        producer_version=str(model.producer_version),
        description=str(model.doc_string).strip(),
        model_version=int(model.model_version),
        inputs=graph_inputs(model),
        outputs=graph_outputs(model),
        external=_external_locations(model, name),
        labels=metadata_labels(model),
        metadata={p.key: p.value for p in model.metadata_props if len(p.key) <= 64 and len(p.value) <= 256},
    )


def load_model(path: Path) -> Any:
    """The graph, parsed without its external data; GraphReadError says why it cannot be."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        size = path.stat().st_size
    except OSError as exc:
        raise GraphReadError(f"{path}: cannot be read ({exc.strerror})") from exc
    if size >= MAX_GRAPH_BYTES:
        raise GraphReadError(
            f"{path} is {size} bytes: one .onnx file cannot exceed 2 GiB; store the weights as external data"
        )
    try:
        return onnx.load(str(path), format="protobuf", load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError) as exc:
        raise GraphReadError(f"{path} cannot be parsed as an ONNX model ({type(exc).__name__}: {exc})") from exc


def _external_locations(model: Any, graph_name: str) -> list[str]:
    """Each file the graph's external tensors live in, once, in the order the graph first names it."""
    found: dict[str, None] = {}
    for ref in external_refs(model):
        if not isinstance(ref, ExternalRef):
            raise GraphReadError(f"{graph_name}: {ref}")
        try:
            rel = check_relative(ref.location).as_posix()
        except BundlePathError as exc:
            raise GraphReadError(
                f"{graph_name}: tensor '{ref.tensor}' keeps its data outside the graph's folder: {exc}"
            ) from exc
        found[str(PurePosixPath(rel))] = None
    return list(found)


def metadata_labels(model: Any) -> MetadataLabels | None:
    """Class names kept in the graph's metadata under a key exporters commonly use; at least two of them."""
    keys = {p.key.lower(): p.key for p in model.metadata_props}
    for wanted in LABEL_KEYS:
        key = keys.get(wanted)
        if key is None:
            continue
        try:
            labels = from_metadata(model, key)
        except LabelError:
            continue
        if len(labels) >= 2:
            return MetadataLabels(key, labels)
    return None
