"""What a model folder in a convention a large tool reads says, before any graph is loaded.

Three layouts are recognised: a Hugging Face repository in transformers.js's layout (`onnx/model.onnx` and one
file per dtype beside it, `config.json` with its `transformers.js_config`), an Optimum export (`model.onnx` beside
`config.json`), and an Ultralytics export (one `.onnx` file whose metadata holds `names`, `imgsz`, `stride`,
`task`). The external-data chunk map `transformers.js_config.use_external_data_format` declares is checked against
the `.onnx_data*` files present here, so a missing or extra chunk is named before a graph is read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.bundle.paths import BundlePathError, resolve_inside
from checker.errors import Error, UsageError
from checker.findings import GRAPH_EXTERNAL_DATA

MAX_JSON_BYTES = 8 << 20  # a config or tokenizer_config is kilobytes; a larger one is not read
MAX_CHUNKS = 1000
MAX_LABELS = 100_000
TRANSFORMERS_JS = "transformers.js"
OPTIMUM = "optimum"
ULTRALYTICS = "ultralytics"
# transformers.js's dtype names and the suffix its files carry (model{suffix}.onnx), in its own order.
DTYPE_SUFFIXES = {
    "fp32": "",
    "fp16": "_fp16",
    "q8": "_quantized",
    "int8": "_int8",
    "uint8": "_uint8",
    "q4": "_q4",
    "q4f16": "_q4f16",
    "bnb4": "_bnb4",
}
ULTRALYTICS_KEYS = ("names", "imgsz", "stride", "task")


class FolderError(Error):
    """The folder is not one `checker init` can start a bundle from, or it contradicts itself."""


@dataclass(frozen=True)
class DtypeFile:
    dtype: str  # transformers.js's name for it: fp16, q8, q4 ...
    path: Path


@dataclass
class ModelFolder:
    root: Path
    layout: str
    baseline: Path
    variants: list[DtypeFile] = field(default_factory=list)  # the default dtype first
    config: dict[str, Any] = field(default_factory=dict)
    default_dtype: str | None = None
    default_device: str | None = None
    said: list[str] = field(default_factory=list)  # what the folder says of itself, for the summary

    def file(self, name: str) -> Path | None:
        """A file of the folder; one that leads outside it (a link, `..`) is refused, not read."""
        path = inside(self.root, name)
        return path if path.is_file() else None


def inside(root: Path, rel: str) -> Path:
    try:
        return resolve_inside(root, rel)
    except BundlePathError as exc:
        raise FolderError(f"{root / rel}: {exc}") from exc


def recognise(root: Path) -> ModelFolder:
    """The folder's layout, its baseline and dtype files; FolderError when it is none of the three."""
    if not root.is_dir():
        raise UsageError(f"{root}: no such folder")
    config = read_json(inside(root, "config.json")) if (root / "config.json").is_file() else {}
    if (root / "onnx" / "model.onnx").is_file():
        folder = ModelFolder(root, TRANSFORMERS_JS, root / "onnx" / "model.onnx", config=config)
        _dtypes(folder)
        check_chunks(folder)
        return folder
    if (root / "model.onnx").is_file() and config:
        folder = ModelFolder(root, OPTIMUM, root / "model.onnx", config=config)
        _dtypes(folder)
        return folder
    graphs = sorted(p for p in root.glob("*.onnx") if p.is_file())
    if len(graphs) == 1 and set(ULTRALYTICS_KEYS) <= _metadata_keys(graphs[0]):
        folder = ModelFolder(root, ULTRALYTICS, graphs[0])
        folder.said.append(f"an Ultralytics export: {graphs[0].name}'s metadata holds {', '.join(ULTRALYTICS_KEYS)}")
        return folder
    raise FolderError(
        f"{root}: no layout checker init knows: expected onnx/model.onnx (transformers.js), model.onnx beside "
        "config.json (Optimum) or one .onnx file with Ultralytics' metadata (names, imgsz, stride, task)"
    )


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> dict[str, Any]:
    """A JSON object from a file of the folder; FolderError names the file and line of what is wrong."""
    if path.stat().st_size > limit:
        raise FolderError(f"{path}: larger than {limit} bytes; not read")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise FolderError(f"{path}: not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise FolderError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise FolderError(f"{path}: expected a JSON object")
    return value


def _js_config(folder: ModelFolder) -> dict[str, Any]:
    found = folder.config.get("transformers.js_config")
    if found is None:
        return {}
    if not isinstance(found, dict):
        raise FolderError(f"{folder.root / 'config.json'}: transformers.js_config is not an object")
    return found


def _dtypes(folder: ModelFolder) -> None:
    """Every dtype file beside the baseline (an Optimum quantizer writes model_quantized.onnx beside model.onnx),
    the one transformers.js_config names as the default first."""
    js = _js_config(folder)
    dtype, device = js.get("dtype"), js.get("device")
    folder.default_dtype = dtype if isinstance(dtype, str) else None
    folder.default_device = device if isinstance(device, str) else None
    here = folder.baseline.parent
    found = [
        DtypeFile(name, here / f"model{suffix}.onnx")
        for name, suffix in DTYPE_SUFFIXES.items()
        if suffix and (here / f"model{suffix}.onnx").is_file()
    ]
    found.sort(key=lambda d: d.dtype != folder.default_dtype)
    folder.variants = found
    said = (
        "a Hugging Face repository in transformers.js's layout: onnx/model.onnx"
        if folder.layout == TRANSFORMERS_JS
        else "an Optimum export: model.onnx beside config.json"
    )
    folder.said.append(said + (f" and {', '.join(d.path.name for d in found)}" if found else ""))
    if folder.default_dtype is not None or folder.default_device is not None:
        folder.said.append(
            f"transformers.js_config's default: dtype {folder.default_dtype or 'unset'}, device "
            f"{folder.default_device or 'unset'}"
            + (" (judged first)" if found and found[0].dtype == folder.default_dtype else "")
        )


def declared_chunks(folder: ModelFolder, graph: Path) -> int | None:
    """The chunks `use_external_data_format` declares for the graph (None: it says nothing)."""
    declared = _js_config(folder).get("use_external_data_format")
    if isinstance(declared, dict):
        declared = declared.get(graph.name, declared.get(graph.stem, 0))
    if declared is None:
        return None
    if isinstance(declared, bool):
        return int(declared)
    if isinstance(declared, int) and 0 <= declared <= MAX_CHUNKS:
        return declared
    raise FolderError(
        f"{folder.root / 'config.json'}: transformers.js_config.use_external_data_format for {graph.name} is "
        f"{declared!r}; expected true, false or a count of chunks from 0 to {MAX_CHUNKS}"
    )


def chunk_names(graph: Path, count: int) -> list[str]:
    """The files transformers.js loads for `count` chunks: model.onnx_data, model.onnx_data_1, ..."""
    return [f"{graph.name}_data" + (f"_{i}" if i else "") for i in range(count)]


def check_chunks(folder: ModelFolder) -> None:
    """Each graph's chunks as declared against the files present: a missing or an extra one is named."""
    if _js_config(folder).get("use_external_data_format") is None:
        return
    for graph in [folder.baseline, *(d.path for d in folder.variants)]:
        count = declared_chunks(folder, graph)
        if count is None:
            continue
        pattern = re.compile(re.escape(graph.name) + r"_data(_[0-9]+)?$")
        present = {p.name for p in graph.parent.iterdir() if pattern.match(p.name)}
        wanted = chunk_names(graph, count)
        rel = graph.relative_to(folder.root).as_posix()
        missing = [n for n in wanted if n not in present]
        extra = sorted(present - set(wanted))
        said = f"config.json's transformers.js_config.use_external_data_format declares {count} for {rel}"
        if missing:
            raise FolderError(
                f"{GRAPH_EXTERNAL_DATA}: onnx/{missing[0]} is missing"
                + (f" (and {', '.join(missing[1:])})" if missing[1:] else "")
                + f": {said}; an application loading it fails"
            )
        if extra:
            raise FolderError(
                f"{GRAPH_EXTERNAL_DATA}: onnx/{extra[0]} is not a declared chunk"
                + (f" (nor {', '.join(extra[1:])})" if extra[1:] else "")
                + f": {said}; an application does not load it (correct the count or remove the file)"
            )


def _metadata_keys(graph: Path) -> set[str]:
    from checker.release.graphfacts import GraphReadError, load_model

    try:
        model = load_model(graph)
    except GraphReadError:
        return set()
    return {p.key for p in model.metadata_props}


def id2label(config: dict[str, Any]) -> list[str] | None:
    """config.json's class names in index order, when they are 0..N-1 with N at least 2."""
    found = config.get("id2label")
    if not isinstance(found, dict) or len(found) < 2:
        return None
    try:
        by_index = {int(k): str(v) for k, v in found.items()}
    except (TypeError, ValueError):
        return None
    if sorted(by_index) != list(range(len(by_index))) or len(by_index) > MAX_LABELS:
        return None
    if any("\n" in v or "\r" in v for v in by_index.values()):
        raise FolderError("config.json's id2label holds a name with a line break; labels.txt holds one per line")
    return [by_index[i] for i in range(len(by_index))]
