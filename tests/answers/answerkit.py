"""Small real detectors for the answer tests: a seeded graph whose output is [1, 4 + classes, anchors] (box centre and
size in pixels, then sigmoid class scores), as a YOLOv8 export is, and bundles around it with letterboxed photos."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CLASSES = ("person", "bicycle", "dog")
ANCHORS = 12
SIZE = 32  # the square input the letterbox makes


def detector(seed: int = 0, weaken: int | None = None, by: float = 0.0, jitter: float = 0.0) -> onnx.ModelProto:
    """images [batch, 3, 32, 32] -> output0 [batch, 4 + 3, 12]. Each anchor's box moves a little with the image's
    mean colour, and its class scores are a sigmoid of a linear map of it. `weaken` lowers one anchor's logits by
    `by` (a planted change: a box whose score falls under the threshold); `jitter` moves every box by up to that
    many pixels (a change the application never shows at IoU 0.5, which `allclose` on the raw tensor fails)."""
    rng = np.random.default_rng(seed)
    c, n = len(CLASSES), ANCHORS
    centres = rng.uniform(6, SIZE - 6, (2, n))
    sizes = rng.uniform(5, 12, (2, n))
    boxes0 = np.concatenate([centres, sizes]).reshape(1, 4 * n)
    wb = rng.normal(0, 0.5, (3, 4 * n))
    ws = rng.normal(0, 2.0, (3, c * n))
    bs = rng.normal(-1.0, 1.5, (1, c * n))
    if jitter:
        boxes0 = boxes0 + np.random.default_rng(seed + 100).uniform(-jitter, jitter, boxes0.shape)
    if weaken is not None:
        bs = bs.copy()
        bs[0, weaken::n] -= by  # every class logit of anchor `weaken`
    init = [
        numpy_helper.from_array(x.astype(np.float32), name)
        for name, x in (("boxes0", boxes0), ("wb", wb), ("ws", ws), ("bs", bs))
    ] + [
        numpy_helper.from_array(np.array([-1, 4, n], np.int64), "box_shape"),
        numpy_helper.from_array(np.array([-1, c, n], np.int64), "score_shape"),
    ]
    nodes = [
        helper.make_node("GlobalAveragePool", ["images"], ["pooled"], name="pool"),
        helper.make_node("Flatten", ["pooled"], ["colour"], name="flatten"),
        helper.make_node("MatMul", ["colour", "wb"], ["dbox"], name="box_head"),
        helper.make_node("Add", ["dbox", "boxes0"], ["boxflat"], name="box_bias"),
        helper.make_node("Reshape", ["boxflat", "box_shape"], ["boxes"], name="box_reshape"),
        helper.make_node("MatMul", ["colour", "ws"], ["dscore"], name="score_head"),
        helper.make_node("Add", ["dscore", "bs"], ["logits"], name="score_bias"),
        helper.make_node("Reshape", ["logits", "score_shape"], ["logit_rows"], name="score_reshape"),
        helper.make_node("Sigmoid", ["logit_rows"], ["scores"], name="sigmoid"),
        helper.make_node("Concat", ["boxes", "scores"], ["output0"], axis=1, name="concat"),
    ]
    graph = helper.make_graph(
        nodes,
        "detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, ["batch", 4 + c, n])],
        init,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    names = {i: name for i, name in enumerate(CLASSES)}
    for key, value in (("names", str(names)), ("imgsz", f"[{SIZE}, {SIZE}]"), ("stride", "32"), ("task", "detect")):
        model.metadata_props.add(key=key, value=value)
    return model


LETTERBOX = {
    "kind": "image",
    "steps": [
        {"decode": {"mode": "RGB"}},
        {"resize": {"fit": [SIZE, SIZE], "filter": "bilinear"}},
        {"pad": {"to": [SIZE, SIZE], "value": 114}},
        {"scale": 0.00392156862745098},
        {"layout": "NCHW"},
    ],
}


def answers_block(**decode: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": "objects",
            "kind": "detections",
            "from": "output0",
            "steps": [{"transpose": [0, 2, 1]}],
            "decode": {
                "layout": "yolo",
                "box_format": "cxcywh",
                "min_score": 0.25,
                "nms": {"iou": 0.45},
                "to_raw": "images",
                **decode,
            },
            "labels": {"path": "labels.txt"},
        }
    ]


def photos(count: int, seed: int = 3) -> list[np.ndarray]:
    """Small RGB photos of several shapes (so the letterbox pads rows in some, columns in others)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        h, w = (40, 64) if i % 3 == 0 else (64, 40) if i % 3 == 1 else (48, 48)
        base = rng.integers(0, 256, 3)
        noise = rng.integers(-40, 40, (h, w, 3))
        out.append(np.clip(base + noise, 0, 255).astype(np.uint8))
    return out


def write_detector_bundle(
    root: Path,
    cases: int = 6,
    variants: list[dict[str, Any]] | None = None,
    graphs: dict[str, onnx.ModelProto] | None = None,
    rules: list[dict[str, Any]] | None = None,
    answers: list[dict[str, Any]] | None = None,
) -> Path:
    """A whole bundle: the float detector, letterboxed photos as raw files, tensors rebuilt by the checker's own
    preprocessing, the expected outputs from the float graph."""
    from PIL import Image

    from checker.preprocess.running import rebuild_file

    root.mkdir(parents=True, exist_ok=True)
    model = detector()
    onnx.save(model, str(root / "model.onnx"))
    for rel, graph in (graphs or {}).items():
        onnx.save(graph, str(root / rel))
    (root / "labels.txt").write_text("".join(f"{c}\n" for c in CLASSES))
    manifest: dict[str, Any] = {
        "manifest_version": 1,
        "release": {"name": "tiny-detector", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "onnx.helper", "version": onnx.__version__}},
        "inputs": [
            {"name": "images", "dtype": "float32", "shape": [1, 3, SIZE, SIZE], "layout": "NCHW", "meaning": "image",
             "preprocessing": LETTERBOX}
        ],
        "outputs": [
            {"name": "output0", "dtype": "float32", "shape": [1, 4 + len(CLASSES), ANCHORS], "meaning": "boxes"}
        ],
        "answers": answers if answers is not None else answers_block(),
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "the float graph"},
            "cases": [],
            "rules": rules if rules is not None else [{"answer": "objects", "check": "detections", "iou": 0.9}],
        },
    }  # fmt: skip
    if variants:
        manifest["variants"] = variants
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    (root / "cases").mkdir(exist_ok=True)
    for i, photo in enumerate(photos(cases)):
        name = f"photo-{i}"
        Image.fromarray(photo).save(root / "cases" / f"{name}.png")
        x = rebuild_file(root / "bundle.json", root, "images", root / "cases" / f"{name}.png")["images"]
        np.save(root / "cases" / f"{name}.images.npy", x)
        from modelkit import run

        np.save(root / "cases" / f"{name}.output0.npy", run(model, {"images": x})["output0"])
        manifest["comparison"]["cases"].append(
            {"name": name, "tags": ["edge"] if i == 0 else [], "inputs": {"images": f"cases/{name}.images.npy"},
             "expected": {"output0": f"cases/{name}.output0.npy"}, "raw": {"images": f"cases/{name}.png"}}
        )  # fmt: skip
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root
