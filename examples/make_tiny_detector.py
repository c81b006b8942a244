"""Build examples/tiny-detector: a small detector release judged on the boxes it shows, byte for byte reproducible.

    python examples/make_tiny_detector.py [OUT_DIR]

The graph is built with onnx.helper from seeded weights: like a YOLOv8 export, its one output is [batch, 4 + 3, 16],
box centre and size in the input's pixels, then sigmoid class scores. The photos are drawn with Pillow in three
shapes and letterboxed into 32 x 32 (resized to fit, padded with grey 114), here with Pillow and NumPy, not with the
checker's own preprocessing; the reference outputs come from a NumPy forward pass; the application's answers, stored
beside each case, come from a NumPy decoding written here (score above 0.25, class-aware NMS at 0.45, the letterbox
undone into the photo's pixels). The int8 variant is made by onnxruntime.quantization.quantize_static with the
output's Concat left in float: quantized with one scale, the boxes' pixels would leave the 0-1 scores a few levels.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from examplekit import quantize, write_and_lock
from onnx import TensorProto, helper, numpy_helper
from PIL import Image, ImageDraw

LABELS = ["person", "bicycle", "dog"]
SIZE, ANCHORS, PAD, HIDDEN = 32, 16, 114, 512
MIN_SCORE, NMS_IOU = 0.25, 0.45
MARGIN = 0.02  # how far every score and overlap keeps from the thresholds (see clear_of_edges)
SEED = 20261205
CASES = [  # name, seed, (width, height), tags
    ("street", 1, (64, 40), ["ordinary"]),
    ("park", 2, (48, 48), ["ordinary"]),
    ("doorway", 3, (40, 64), ["ordinary", "tall"]),
    ("crossing", 4, (80, 44), ["ordinary", "wide"]),
    ("night", 5, (64, 40), ["edge", "dark"]),
    ("glare", 6, (48, 48), ["edge", "bright"]),
]


def weights(seed: int) -> dict[str, np.ndarray]:
    """A hidden layer of 512 (so that the int8 variant is smaller), then a box head and a score head."""
    rng = np.random.default_rng(seed)
    spread = 1 / np.sqrt(HIDDEN)
    return {
        "w1": rng.normal(0, 2.0, (3, HIDDEN)).astype(np.float32),
        "b1": rng.normal(0, 0.5, (1, HIDDEN)).astype(np.float32),
        "boxes0": np.concatenate([rng.uniform(6, SIZE - 6, (2, ANCHORS)), rng.uniform(5, 12, (2, ANCHORS))])
        .reshape(1, 4 * ANCHORS)
        .astype(np.float32),
        "wb": rng.normal(0, 0.5 * spread, (HIDDEN, 4 * ANCHORS)).astype(np.float32),
        "ws": rng.normal(0, 2.0 * spread, (HIDDEN, len(LABELS) * ANCHORS)).astype(np.float32),
        "bs": rng.normal(-1.0, 1.5, (1, len(LABELS) * ANCHORS)).astype(np.float32),
    }


def build_graph(w: dict[str, np.ndarray]) -> onnx.ModelProto:
    c, n = len(LABELS), ANCHORS
    shapes = [
        numpy_helper.from_array(np.array(s, np.int64), k)
        for k, s in (("box_shape", [-1, 4, n]), ("score_shape", [-1, c, n]))
    ]
    nodes = [
        helper.make_node("GlobalAveragePool", ["images"], ["pooled"], "pool"),
        helper.make_node("Flatten", ["pooled"], ["colour"], "flatten"),
        helper.make_node("MatMul", ["colour", "w1"], ["h1"], "hidden"),
        helper.make_node("Add", ["h1", "b1"], ["h1b"], "hidden_bias"),
        helper.make_node("Relu", ["h1b"], ["features"], "relu"),
        helper.make_node("MatMul", ["features", "wb"], ["dbox"], "box_head"),
        helper.make_node("Add", ["dbox", "boxes0"], ["boxflat"], "box_bias"),
        helper.make_node("Reshape", ["boxflat", "box_shape"], ["boxes"], "box_reshape"),
        helper.make_node("MatMul", ["features", "ws"], ["dscore"], "score_head"),
        helper.make_node("Add", ["dscore", "bs"], ["logits"], "score_bias"),
        helper.make_node("Reshape", ["logits", "score_shape"], ["logit_rows"], "score_reshape"),
        helper.make_node("Sigmoid", ["logit_rows"], ["scores"], "sigmoid"),
        helper.make_node("Concat", ["boxes", "scores"], ["output0"], "concat", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, ["batch", 4 + c, n])],
        [numpy_helper.from_array(v, k) for k, v in w.items()] + shapes,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    names = {i: label for i, label in enumerate(LABELS)}
    for key, value in (("names", str(names)), ("imgsz", f"[{SIZE}, {SIZE}]"), ("stride", "32"), ("task", "detect")):
        model.metadata_props.add(key=key, value=value)
    return model


def forward(x: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    colour = x.astype(np.float64).mean(axis=(2, 3))
    features = np.maximum(colour @ w["w1"] + w["b1"], 0.0)
    boxes = (features @ w["wb"] + w["boxes0"]).reshape(-1, 4, ANCHORS)
    scores = 1 / (1 + np.exp(-(features @ w["ws"] + w["bs"]).reshape(-1, len(LABELS), ANCHORS)))
    return np.concatenate([boxes, scores], axis=1).astype(np.float32)


def draw(seed: int, size: tuple[int, int], brightness: float) -> Image.Image:
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", size, tuple(int(v) for v in rng.integers(40, 200, 3)))
    pen = ImageDraw.Draw(image)
    for _ in range(4):
        x0, y0 = int(rng.integers(0, size[0] - 8)), int(rng.integers(0, size[1] - 8))
        pen.rectangle([x0, y0, x0 + int(rng.integers(6, 20)), y0 + int(rng.integers(6, 20))],
                      fill=tuple(int(v) for v in rng.integers(0, 256, 3)))  # fmt: skip
    pixels = np.clip(np.asarray(image, np.float32) * brightness, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels)


def letterbox(image: Image.Image) -> tuple[np.ndarray, float, int, int]:
    """Resized to fit 32 x 32 (bilinear, sides rounded half up), centred on grey 114, /255, NCHW; the scale and the
    padding's top and left, to undo it."""
    w, h = image.size
    scale = SIZE / max(w, h)
    nw, nh = (SIZE, int(h * scale + 0.5)) if w >= h else (int(w * scale + 0.5), SIZE)
    canvas = np.full((SIZE, SIZE, 3), PAD, np.uint8)
    top, left = (SIZE - nh) // 2, (SIZE - nw) // 2
    canvas[top : top + nh, left : left + nw] = np.asarray(image.resize((nw, nh), Image.Resampling.BILINEAR))
    x = (canvas.astype(np.float32) * np.float32(1 / 255)).transpose(2, 0, 1)[None]
    return x, nw / w, top, left


def iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def decode(output0: np.ndarray, scale: float, top: int, left: int, size: tuple[int, int]) -> list[dict[str, object]]:
    """The application's decoding: best class above 0.25, class-aware greedy NMS at 0.45, the letterbox undone."""
    rows = output0[0].T.astype(np.float64)
    corners = np.stack([rows[:, 0] - rows[:, 2] / 2, rows[:, 1] - rows[:, 3] / 2,
                        rows[:, 0] + rows[:, 2] / 2, rows[:, 1] + rows[:, 3] / 2], axis=1)  # fmt: skip
    best, cls = rows[:, 4:].max(axis=1), rows[:, 4:].argmax(axis=1)
    kept: list[int] = []
    for i in sorted(np.flatnonzero(best > MIN_SCORE), key=lambda k: -best[k]):
        if all(cls[j] != cls[i] or iou(corners[i], corners[j]) <= NMS_IOU for j in kept):
            kept.append(int(i))
    w, h = size
    out = []
    for i in kept:
        x1, y1, x2, y2 = corners[i]
        box = [(x1 - left) / scale, (y1 - top) / scale, (x2 - left) / scale, (y2 - top) / scale]
        box = [min(max(v, 0.0), lim) for v, lim in zip(box, (w, h, w, h))]
        out.append({"box": [round(v, 2) for v in box], "label": LABELS[cls[i]], "score": round(float(best[i]), 4)})
    return out


def clear_of_edges(outputs: list[np.ndarray]) -> bool:
    """No score within MARGIN of the threshold, no kept box whose two best classes lie within it, and no pair of
    same-class boxes within it of the NMS IoU: the int8 variant's rounding can then move no box across any of
    them, on any CPU."""
    for output0 in outputs:
        rows = output0[0].T.astype(np.float64)
        best = rows[:, 4:].max(axis=1)
        if np.any(np.abs(best - MIN_SCORE) < MARGIN):
            return False
        second = np.sort(rows[:, 4:], axis=1)[:, -2]
        if np.any((best > MIN_SCORE) & (best - second < MARGIN)):
            return False
        corners = np.stack([rows[:, 0] - rows[:, 2] / 2, rows[:, 1] - rows[:, 3] / 2,
                            rows[:, 0] + rows[:, 2] / 2, rows[:, 1] + rows[:, 3] / 2], axis=1)  # fmt: skip
        cls = rows[:, 4:].argmax(axis=1)
        for i in range(len(rows)):
            for j in range(i):
                both = best[i] > MIN_SCORE and best[j] > MIN_SCORE and cls[i] == cls[j]
                if both and abs(iou(corners[i], corners[j]) - NMS_IOU) < MARGIN:
                    return False
    return True


MANIFEST = """\
# yaml-language-server: $schema=../../schemas/manifest.schema.json
# A tiny detector, judged on the boxes it shows. Made by examples/make_tiny_detector.py.
manifest_version: 1
release:
  name: tiny-detector
  version: 1.0.0
  description: A 3-class detector for the example edge camera; letterboxed input, YOLOv8-style output.
  license: Apache-2.0
graph:
  path: model.onnx
  producer:
    tool: onnx.helper
    version: "{onnx_version}"
    settings: {{opset: 17, ir_version: 8}}
inputs:
  - name: images
    dtype: float32
    shape: [batch, 3, 32, 32]
    layout: NCHW
    meaning: image
    preprocessing:
      kind: image
      steps:
        - decode: {{mode: RGB}}
        - resize: {{fit: [32, 32], filter: bilinear}}
        - pad: {{to: [32, 32], value: 114}}
        - scale: 0.00392156862745098    # 1/255
        - layout: NCHW
outputs:
  - name: output0
    dtype: float32
    shape: [batch, 7, 16]
    meaning: boxes
answers:
  - name: objects
    kind: detections
    from: output0
    steps: [{{transpose: [0, 2, 1]}}]    # [batch, 4 + classes, anchors] -> rows
    decode: {{layout: yolo, box_format: cxcywh, min_score: 0.25, nms: {{iou: 0.45}}, to_raw: images}}
    labels: {{path: labels.txt}}
runtime:
  name: onnxruntime
  version: ">=1.17,<2"
  execution_providers: [CPUExecutionProvider]
validation:
  command: checker verify bundle.yaml
  timeout_s: 600
comparison:
  reference:
    description: NumPy float64 forward pass of the same weights (examples/make_tiny_detector.py)
  cases:
{cases}
  rules:
    - {{output: output0, check: allclose, atol: 1.0e-4, rtol: 1.0e-3}}
    - {{answer: objects, check: detections, iou: 0.9}}
variants:
  - name: int8
    graph: {{path: model.int8.onnx}}
    derived_from: baseline
    transform:
      tool: onnxruntime.quantization.quantize_static
      version: "{ort_version}"
      settings: {{quant_format: QDQ, per_channel: false, activation_type: QUInt8, weight_type: QInt8,
                  calibrate_method: MinMax, calibration_cases: 6, nodes_to_exclude: [concat]}}
    rules:
      - {{answer: objects, check: detections, iou: 0.5, max_score_drift: 0.05}}
    drift_rules:
      - {{answer: objects, check: detections, iou: 0.5}}
"""


def case_yaml(name: str, tags: list[str]) -> str:
    return (
        f"    - name: {name}\n      tags: [{', '.join(tags)}]\n"
        f"      inputs: {{images: cases/{name}/images.npy}}\n"
        f"      expected: {{output0: cases/{name}/output0.npy}}\n"
        f"      raw: {{images: cases/{name}/photo.png}}\n"
        f"      expected_answers: {{objects: cases/{name}/objects.json}}"
    )


def main(out: Path) -> None:
    photos = [
        draw(seed, size, 0.25 if "dark" in tags else 1.6 if "bright" in tags else 1.0) for _, seed, size, tags in CASES
    ]
    boxed = [letterbox(p) for p in photos]
    seed = SEED
    while not clear_of_edges([forward(x, weights(seed)) for x, *_ in boxed]):
        seed += 1  # weights whose answers no rounding can flip: the example passes on every CPU
    w = weights(seed)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    onnx.save(build_graph(w), str(out / "model.onnx"))
    (out / "labels.txt").write_text("\n".join(LABELS) + "\n")
    for (name, _, size, _), photo, (x, scale, top, left) in zip(CASES, photos, boxed):
        folder = out / "cases" / name
        folder.mkdir(parents=True)
        photo.save(folder / "photo.png", optimize=False)
        output0 = forward(x, w)
        np.save(folder / "images.npy", x)
        np.save(folder / "output0.npy", output0)
        (folder / "objects.json").write_text(json.dumps(decode(output0, scale, top, left, size)) + "\n")
    # The output's Concat stays in float: quantized with one scale, the boxes' pixels would move the scores.
    tensors = [x for x, *_ in boxed]
    quantize(out / "model.onnx", out / "model.int8.onnx", "images", tensors, nodes_to_exclude=["concat"])
    write_and_lock(out, MANIFEST, "\n".join(case_yaml(name, tags) for name, _, _, tags in CASES))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "tiny-detector")
