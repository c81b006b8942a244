"""Bundles around the real models the answers are tested on (fetched by tests/fetch_models.py): NudeNet's YOLOv8n
detector with its own decoding as the application, PP-OCRv4's CTC recogniser, all-MiniLM-L6-v2 with its tokenizer,
and Silero's voice activity detector with a threshold."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fetch_models import cached

VALIDATION = {"command": "checker verify bundle.json"}
RUNTIME = {"name": "onnxruntime", "version": ">=1.20"}


def need(name: str) -> Path:
    path = cached(name)
    if path is None:
        pytest.skip(f"{name} is not in the model cache; fetch it with: python tests/fetch_models.py")
    return path


def manifest(name: str, graph: str, inputs: list[Any], outputs: list[Any], answers: list[Any],
             cases: list[Any], rules: list[Any], variants: list[Any] | None = None) -> dict[str, Any]:  # fmt: skip
    data: dict[str, Any] = {
        "manifest_version": 1,
        "release": {"name": name, "version": "1.0.0"},
        "graph": {"path": graph, "producer": {"tool": "a PyPI wheel", "version": "pinned"}},
        "inputs": inputs,
        "outputs": outputs,
        "answers": answers,
        "runtime": RUNTIME,
        "validation": VALIDATION,
        "comparison": {"reference": {"description": "the shipped graph"}, "cases": cases, "rules": rules},
    }
    if variants:
        data["variants"] = variants
    return data


def variant(name: str, path: str, rules: list[Any], settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name, "graph": {"path": path}, "derived_from": "baseline", "rules": rules,
        "transform": {"tool": "onnxruntime.quantization.quantize_dynamic", "version": "1.32.0", "settings": settings},
    }  # fmt: skip


def run(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


# NudeNet: the raw photos are one size (the package pads each to a square of its longer side, which only a fixed
# size lets a manifest declare; and it feeds the model BGR: its cvtColor and blobFromImage swap twice), its tensors
# made by its own _read_image and its answers by its own _postprocess.

NUDENET_SIZE = (320, 480)  # height, width of the raw photos
NUDENET_STEPS = [
    {"decode": {"mode": "BGR", "library": "opencv"}},
    {"pad": {"to": [480, 480], "position": "top_left"}},
    {"resize": {"size": [320, 320], "library": "opencv", "filter": "linear"}},
    {"scale": 0.00392156862745098},
    {"layout": "NCHW"},
]
PHOTOS = ("astronaut", "astronaut-flipped", "astronaut-face", "camera", "camera-flipped", "coffee", "rocket")


def photo(name: str) -> Any:
    """A scikit-image photograph, flipped or cropped to its face as the name says, at the one raw size."""
    import skimage.data
    from PIL import Image, ImageOps

    image = Image.fromarray(getattr(skimage.data, name.split("-")[0])()).convert("RGB")
    if name.endswith("-flipped"):
        image = ImageOps.mirror(image)
    if name.endswith("-face"):
        image = image.crop((100, 0, 400, 200))
    return image.resize(NUDENET_SIZE[::-1])


def nudenet_module() -> Any:
    folder = need("nudenet-3.4.2")
    pytest.importorskip("cv2")
    spec = importlib.util.spec_from_file_location("nudenet_application", folder / "nudenet" / "nudenet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nudenet_labels(module: Any) -> list[str]:
    return list(vars(module)["__labels"])


def write_nudenet(root: Path, answers_decode: dict[str, Any] | None = None, stored: bool = True,
                  variants: list[Any] | None = None, graphs: dict[str, Path] | None = None) -> Path:  # fmt: skip
    module = nudenet_module()
    model = need("nudenet-320n.onnx")
    root.mkdir(parents=True)
    shutil.copyfile(model, root / "model.onnx")
    for rel, path in (graphs or {}).items():
        shutil.copyfile(path, root / rel)
    (root / "labels.txt").write_text("".join(f"{label}\n" for label in nudenet_labels(module)))
    cases = []
    (root / "cases").mkdir()
    for name in PHOTOS:
        photo(name).save(root / "cases" / f"{name}.png")
        blob, x_ratio, y_ratio, x_pad, y_pad, w, h = module._read_image(str(root / "cases" / f"{name}.png"), 320)
        outputs = run(model, {"images": blob})
        np.save(root / "cases" / f"{name}.images.npy", blob)
        np.save(root / "cases" / f"{name}.output0.npy", outputs["output0"])
        case: dict[str, Any] = {
            "name": name, "inputs": {"images": f"cases/{name}.images.npy"},
            "expected": {"output0": f"cases/{name}.output0.npy"}, "raw": {"images": f"cases/{name}.png"},
            "tags": ["edge"] if name == "rocket" else [],
        }  # fmt: skip
        if stored:
            shown = module._postprocess([outputs["output0"]], x_pad, y_pad, x_ratio, y_ratio, w, h, 320, 320)
            answer = [{"box": [x, y, x + bw, y + bh], "label": d["class"], "score": d["score"]}
                      for d in shown for x, y, bw, bh in [d["box"]]]  # fmt: skip
            (root / "cases" / f"{name}.objects.json").write_text(json.dumps(answer))
            case["expected_answers"] = {"objects": f"cases/{name}.objects.json"}
        cases.append(case)
    decode = {"layout": "yolo", "box_format": "cxcywh", "min_score": 0.25,
              "nms": {"iou": 0.45, "class_aware": False}, "to_raw": "images", **(answers_decode or {})}  # fmt: skip
    kept = {k: v for k, v in decode.items() if v is not None}
    answers = [{"name": "objects", "kind": "detections", "from": "output0", "steps": [{"transpose": [0, 2, 1]}],
                "decode": kept, "labels": {"path": "labels.txt"}}]  # fmt: skip
    inputs = [{"name": "images", "dtype": "float32", "shape": [1, 3, 320, 320], "layout": "NCHW", "meaning": "image",
               "preprocessing": {"kind": "image", "steps": NUDENET_STEPS}}]  # fmt: skip
    outputs = [{"name": "output0", "dtype": "float32", "shape": [1, 22, 2100], "meaning": "boxes"}]
    rules = [{"answer": "objects", "check": "detections", "iou": 0.9}]
    data = manifest("nudenet-320n", "model.onnx", inputs, outputs, answers, cases, rules, variants)
    (root / "bundle.json").write_text(json.dumps(data, indent=2))
    return root


def quantized(
    source: Path, target: Path, static_from: list[Any] | None = None, name: str = "images", matmul_only: bool = False
) -> Path:
    """onnxruntime's dynamic int8 quantization (of the MatMul nodes alone where a graph's Conv weights are not
    initializers), or its default static QDQ quantization calibrated on `static_from`."""
    from onnxruntime.quantization import CalibrationDataReader, quantize_dynamic, quantize_static

    if static_from is None:
        quantize_dynamic(str(source), str(target), op_types_to_quantize=["MatMul"] if matmul_only else None)
        return target

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items = iter(static_from or [])

        def get_next(self) -> dict[str, np.ndarray] | None:
            item = next(self._items, None)
            return None if item is None else item if isinstance(item, dict) else {name: item}

    quantize_static(str(source), str(target), Reader())
    return target


def package_on_path(name: str) -> None:
    folder = need(name)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def half_weights(source: Path, target: Path) -> Path:
    """The graph with every float initializer rounded to float16 precision: a variant whose tensors move a little
    everywhere."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    for i, tensor in enumerate(model.graph.initializer):
        array = numpy_helper.to_array(tensor)
        if array.dtype == np.float32 and np.abs(array).max(initial=0.0) < 65000:  # the huge masking constants stay
            rounded = numpy_helper.from_array(array.astype(np.float16).astype(np.float32), tensor.name)
            model.graph.initializer[i].CopyFrom(rounded)
    onnx.save(model, str(target))
    return target


def dynamic_int8(source: Path, target: Path, work: Path) -> Path:
    """onnxruntime's dynamic int8 quantization as its documentation prescribes it: the graph pre-processed by
    quant_pre_process, weights QInt8 with `reduce_range` (7-bit weights, so that no CPU's u8 x s8 kernel saturates:
    VNNI, AVX2 and ARM make the same integers), the result's nodes put back in topological order.

    Two real graphs need more than the one call. all-MiniLM-L6-v2 ships int8 weights already, cast and scaled in the
    graph, so quantize_dynamic would find no float MatMul weight: onnxruntime's own constant folding
    (ORT_ENABLE_BASIC) makes them float initializers first. Silero VAD's LSTM lives in If branches that read the
    outer graph, which the symbolic shape inference of quant_pre_process cannot follow (it is skipped), and
    quantize_dynamic writes the If nodes out of order, which the ONNX checker refuses: onnx-ir's sort, which counts
    a branch's outer-scope reads, restores the order."""
    import onnx_ir
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    folded, prepared = work / f"{target.stem}.folded.onnx", work / f"{target.stem}.prepared.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    quant_pre_process(str(folded), str(prepared), skip_symbolic_shape=True)
    quantize_dynamic(str(prepared), str(target), weight_type=QuantType.QInt8, reduce_range=True)
    model = onnx_ir.load(target)
    model.graph.sort()
    # onnxruntime's optimizer imports every domain it knows (ai.onnx.ml 5 needs onnxruntime 1.21); keep the used.
    used = {node.domain for node in model.graph.all_nodes()} | {""}
    for domain in [d for d in model.graph.opset_imports if d not in used]:
        del model.graph.opset_imports[domain]
    onnx_ir.save(model, target)
    return target


def scaled_scores(source: Path, target: Path, label: int, factor: float) -> Path:
    """The graph with one class's score row of `output0` multiplied by `factor` after the last node (a per-class
    recalibration): the same kernels on every CPU, so the scores it moves move by the same amount everywhere."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    (output,) = [o for o in model.graph.output if o.name == "output0"]
    rows = output.type.tensor_type.shape.dim[1].dim_value
    for node in model.graph.node:
        node.output[:] = ["output0.unscaled" if name == "output0" else name for name in node.output]
    scale = np.ones((1, rows, 1), np.float32)
    scale[0, 4 + label, 0] = factor
    model.graph.initializer.append(numpy_helper.from_array(scale, "output0.class_scale"))
    model.graph.node.append(helper.make_node("Mul", ["output0.unscaled", "output0.class_scale"], ["output0"]))
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return target
