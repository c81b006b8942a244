"""Build examples/mobilenet-tiny: a small image classifier release bundle, byte for byte reproducible.

    python examples/make_mobilenet_tiny.py [OUT_DIR]

The graph is built with onnx.helper from seeded weights; the application inputs are synthetic photographs drawn
with Pillow; their tensors are made here with Pillow and NumPy (not with the checker's own preprocessing, so the
checker's fidelity check compares two implementations); the reference outputs come from a NumPy forward pass,
independent of onnxruntime. The int8 variant is made by onnxruntime.quantization.quantize_static; its bytes are
reproducible for one onnxruntime version.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from examplekit import quantize, write_and_lock
from onnx import TensorProto, helper, numpy_helper
from PIL import Image, ImageDraw

LABELS = ["cat", "dog", "fox", "owl", "cow", "hen", "elk", "bee", "ant", "eel"]
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
SIZE = 32
RESIZE = 36
SEED = 20261130


def weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return {
        "conv1.w": (rng.standard_normal((8, 3, 3, 3)) * 0.4).astype(np.float32),
        "conv1.b": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "conv2.w": (rng.standard_normal((16, 8, 3, 3)) * 0.25).astype(np.float32),
        "conv2.b": (rng.standard_normal(16) * 0.1).astype(np.float32),
        "fc.w": (rng.standard_normal((10, 16)) * 0.8).astype(np.float32),
        "fc.b": (rng.standard_normal(10) * 0.1).astype(np.float32),
    }


def build_graph(w: dict[str, np.ndarray]) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Conv", ["pixel_values", "conv1.w", "conv1.b"], ["c1"], "conv1", strides=[2, 2], pads=[1] * 4),
        helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
        helper.make_node("Conv", ["r1", "conv2.w", "conv2.b"], ["c2"], "conv2", strides=[2, 2], pads=[1] * 4),
        helper.make_node("Relu", ["c2"], ["r2"], "relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["pool"], "pool"),
        helper.make_node("Flatten", ["pool"], ["flat"], "flatten"),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], "fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "mobilenet_tiny",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", len(LABELS)])],
        [numpy_helper.from_array(v, k) for k, v in w.items()],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        ir_version=8,
        producer_name="examples/make_mobilenet_tiny.py",
        producer_version="1",
    )
    onnx.checker.check_model(model)
    return model


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int) -> np.ndarray:
    """A plain NumPy convolution (3x3, padding 1), float64 for an independent reference."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (h + 2 - 3) // stride + 1, (wd + 2 - 3) // stride + 1
    cols = np.empty((n, c, 3, 3, oh, ow))
    for i in range(3):
        for j in range(3):
            cols[:, :, i, j] = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
    return np.einsum("ncijhw,ocij->nohw", cols, w.astype(np.float64)) + b[None, :, None, None]


def forward(x: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    h = np.maximum(conv2d(x.astype(np.float64), w["conv1.w"], w["conv1.b"], 2), 0)
    h = np.maximum(conv2d(h, w["conv2.w"], w["conv2.b"], 2), 0)
    pooled = h.mean(axis=(2, 3))
    return (pooled @ w["fc.w"].T.astype(np.float64) + w["fc.b"]).astype(np.float32)


def draw(seed: int, size: tuple[int, int], brightness: float) -> Image.Image:
    """A synthetic photograph: a gradient sky, a few shapes, sensor noise."""
    rng = np.random.default_rng(seed)
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx / w * 255, yy / h * 255, (xx + yy) / (w + h) * 255], axis=-1)
    base = base * rng.uniform(0.3, 1.0, 3)
    image = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
    pen = ImageDraw.Draw(image)
    for _ in range(4):
        x0, y0 = int(rng.integers(0, w - 4)), int(rng.integers(0, h - 4))
        box = [x0, y0, x0 + int(rng.integers(4, w // 2 + 5)), y0 + int(rng.integers(4, h // 2 + 5))]
        pen.ellipse(box, fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
    noisy = np.asarray(image, dtype=np.float64) + rng.normal(0, 6, (h, w, 3))
    return Image.fromarray(np.clip(noisy * brightness, 0, 255).astype(np.uint8))


def preprocess(image: Image.Image) -> np.ndarray:
    """Shorter side to 36 (bilinear), centre crop 32, /255, ImageNet mean and std, NCHW."""
    w, h = image.size
    scale = RESIZE / min(w, h)
    image = image.resize((round(w * scale), round(h * scale)), Image.Resampling.BILINEAR)
    w, h = image.size
    left, top = (w - SIZE) // 2, (h - SIZE) // 2  # an odd remainder goes to the right and bottom
    image = image.crop((left, top, left + SIZE, top + SIZE))
    x = (np.asarray(image, dtype=np.float32) * np.float32(1 / 255) - MEAN) / STD
    return x.transpose(2, 0, 1)[None].astype(np.float32)


CASES = [  # name, seed, size, brightness, tags
    ("meadow", 1, (48, 40), 1.0, ["ordinary"]),
    ("harbour", 2, (64, 48), 1.0, ["ordinary"]),
    ("forest", 3, (40, 56), 0.9, ["ordinary"]),
    ("portrait", 4, (36, 72), 1.0, ["ordinary", "tall"]),
    ("dusk", 5, (48, 48), 0.15, ["edge", "dark"]),
    ("thumbnail", 6, (12, 10), 1.0, ["edge", "upscaled"]),
    ("panorama", 7, (160, 36), 1.1, ["edge", "wide"]),
    ("overexposed", 8, (50, 44), 2.5, ["edge", "bright"]),
]

MANIFEST = """\
# yaml-language-server: $schema=../../schemas/manifest.schema.json
# A tiny image classifier, released with its int8 variant. Made by examples/make_mobilenet_tiny.py.
manifest_version: 1
release:
  name: mobilenet-tiny
  version: 1.0.0
  description: A 10-class image classifier for the example edge camera.
  license: Apache-2.0
graph:
  path: model.onnx
  producer:
    tool: onnx.helper
    version: "{onnx_version}"
    settings: {{opset: 17, ir_version: 8}}
inputs:
  - name: pixel_values
    dtype: float32
    shape: [batch, 3, 32, 32]
    layout: NCHW
    meaning: image
    preprocessing:
      kind: image
      color: RGB
      resize: {{mode: shorter_side, size: 36, interpolation: bilinear}}
      crop: {{mode: center, size: [32, 32]}}
      scale: 0.00392156862745098    # 1/255
      mean: [0.485, 0.456, 0.406]
      std: [0.229, 0.224, 0.225]
outputs:
  - name: logits
    dtype: float32
    shape: [batch, 10]
    meaning: logits
    labels: {{path: labels.txt, axis: -1}}
runtime:
  name: onnxruntime
  version: ">=1.17,<2"
  execution_providers: [CPUExecutionProvider]
  session_options: {{graph_optimization_level: all, intra_op_num_threads: 1}}
  target: Raspberry Pi 5, aarch64, Debian 12
validation:
  command: checker verify bundle.yaml
  timeout_s: 600
comparison:
  reference:
    description: NumPy float64 forward pass of the same weights (examples/make_mobilenet_tiny.py)
  cases:
{cases}
  rules:
    - {{output: logits, check: allclose, atol: 1.0e-4, rtol: 1.0e-3}}
    - {{output: logits, check: topk, k: 3}}
variants:
  - name: int8
    graph: {{path: model.int8.onnx}}
    derived_from: baseline
    transform:
      tool: onnxruntime.quantization.quantize_static
      version: "{ort_version}"
      settings: {{quant_format: QDQ, per_channel: true, activation_type: QUInt8, weight_type: QInt8,
                  calibrate_method: MinMax, calibration_cases: 8}}
    rules:
      - {{output: logits, check: topk, k: 1, min_agreement: 1.0}}
      - {{output: logits, check: score_drift, max: 0.05, apply: softmax}}
    drift_rules:
      - {{output: logits, check: cosine, min: 0.99}}
"""


def case_yaml(name: str, tags: list[str]) -> str:
    return (
        f"    - name: {name}\n      tags: [{', '.join(tags)}]\n"
        f"      inputs: {{pixel_values: cases/{name}/pixel_values.npy}}\n"
        f"      expected: {{logits: cases/{name}/logits.npy}}\n"
        f"      raw: {{pixel_values: cases/{name}/photo.png}}"
    )


def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    w = weights()
    onnx.save(build_graph(w), str(out / "model.onnx"))
    (out / "labels.txt").write_text("\n".join(LABELS) + "\n")
    tensors = []
    for name, seed, size, brightness, _ in CASES:
        folder = out / "cases" / name
        folder.mkdir(parents=True)
        photo = draw(seed, size, brightness)
        photo.save(folder / "photo.png", optimize=False)
        x = preprocess(photo)
        tensors.append(x)
        np.save(folder / "pixel_values.npy", x)
        np.save(folder / "logits.npy", forward(x, w))
    quantize(out / "model.onnx", out / "model.int8.onnx", "pixel_values", tensors, per_channel=True)
    write_and_lock(out, MANIFEST, "\n".join(case_yaml(name, tags) for name, _, _, _, tags in CASES))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "mobilenet-tiny")
