"""A real shipped model end to end: rapidocr's text orientation classifier (the 0.6 MB ONNX file its wheel
ships), released with the exact steps of its batched input, and verified as a user would.

The reference tensors are made by the package's own `TextClassifier` (oracles.py); the expected outputs come
from the package's own inference session. The package's own `__call__` on the same crops must reach the same
labels and scores, so the batch stored is the batch the application feeds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from oracles import rapidocr_classifier, rapidocr_classifier_batch, rapidocr_config, rapidocr_image
from test_real_pipelines import ORIENTATION, raw_image

from checker.context import Options
from checker.verify import verify_paths

COPIES = 3


def write_bundle(root: Path, classifier: Any) -> tuple[Path, list[tuple[Path, np.ndarray]]]:
    cls = rapidocr_config()["Cls"]
    (root / "cases").mkdir(parents=True)
    (root / "model.onnx").write_bytes(Path(cls["model_path"]).read_bytes())
    (root / "labels.txt").write_text("\n".join(cls["label_list"]) + "\n")
    cases, made = [], []
    for i, (h, w) in enumerate([(25, 70), (20, 100)]):  # a ceil'd width (134.4 -> 135), and one capped at 192
        raw = raw_image(root / "cases", f"line{i}", h, w, 30 * i)
        batch = rapidocr_classifier_batch(raw, COPIES)
        probabilities = classifier.infer(batch)[0]  # the package's own session (OrtInferSession.__call__)
        np.save(root / "cases" / f"line{i}.npy", batch)
        np.save(root / "cases" / f"line{i}_prob.npy", probabilities)
        made.append((raw, probabilities))
        cases.append(
            {
                "name": f"line{i}",
                "inputs": {"x": f"cases/line{i}.npy"},
                "expected": {"prob": f"cases/line{i}_prob.npy"},
                "raw": {"x": f"cases/line{i}.png"},
            }
        )
    manifest = {
        "manifest_version": 1,
        "release": {"name": "ppocr-mobile-cls", "version": "1.4.4"},
        "graph": {"path": "model.onnx", "producer": {"tool": "rapidocr-onnxruntime wheel", "version": "1.4.4"}},
        "inputs": [
            {"name": "x", "dtype": "float32", "shape": [COPIES, 3, 48, 192], "layout": "NCHW", "meaning": "image"}
            | {"preprocessing": {"kind": "image", "steps": ORIENTATION}},
        ],
        "outputs": [
            {"name": "save_infer_model/scale_0.tmp_1", "dtype": "float32", "shape": [COPIES, 2]}
            | {"meaning": "probabilities", "labels": {"path": "labels.txt", "axis": -1}},
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.json"},
        "comparison": {
            "reference": {"description": "rapidocr_onnxruntime 1.4.4's own session on its own batch"},
            "cases": [
                {**case, "expected": {"save_infer_model/scale_0.tmp_1": case["expected"]["prob"]}} for case in cases
            ],
            "rules": [{"output": "save_infer_model/scale_0.tmp_1", "check": "max_abs", "max": 1e-5}],
        },
    }
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root, made


def test_the_shipped_orientation_classifier_is_verified_from_its_raw_crops(tmp_path: Path) -> None:
    classifier = rapidocr_classifier()
    root, made = write_bundle(tmp_path / "b", classifier)

    # the application's own call on three copies of each crop reaches the outputs stored as expected
    for raw, probabilities in made:
        _, results, _ = classifier([rapidocr_image(raw)] * COPIES)
        for (label, score), stored in zip(results, probabilities, strict=True):
            assert label == classifier.postprocess_op.label_list[int(stored.argmax())]
            assert abs(score - stored.max()) < 1e-6

    bundle = verify_paths([str(root)], Options()).to_dict()["bundles"][0]
    assert [f for f in bundle["findings"] if f["severity"] == "error"] == []
    assert [f["message"] for f in bundle["findings"] if f["id"].startswith("inputs.")] == []
    assert bundle["comparisons"][0]["status"] == "pass"

    # declared without its batch of copies, each case is named with the step that was left out
    manifest = json.loads((root / "bundle.json").read_text())
    manifest["inputs"][0]["preprocessing"]["steps"] = [s for s in ORIENTATION if "batch" not in s]
    (root / "bundle.json").write_text(json.dumps(manifest))
    bundle = verify_paths([str(root)], Options()).to_dict()["bundles"][0]
    messages = [f["message"] for f in bundle["findings"] if f["id"] == "inputs.fidelity"]
    assert len(messages) == 2, messages
    assert all("with `batch: {repeat: 3}` added" in m for m in messages), messages
