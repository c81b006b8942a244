"""A detector judged on the boxes the application shows: the false pass and the false alarm of tensor rules, and the
application's stored answers proven, each planted mistake of the declaration named by its edit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from answer_oracles import ultralytics_nms
from answerkit import CLASSES, SIZE, answers_block, detector, write_detector_bundle

from checker.context import Options
from checker.reports.model import BundleReport
from checker.verify import verify_bundle

pytest.importorskip("PIL")


def verify(root: Path) -> BundleReport:
    return verify_bundle(root, Options(gain_budget_s=0.0))


def errors(report: BundleReport, fid: str) -> list[str]:
    return [f.message for f in report.findings if f.id == fid]


def variant(name: str, rules: list[dict[str, Any]], drift: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entry = {
        "name": name,
        "graph": {"path": f"{name}.onnx"},
        "derived_from": "baseline",
        "transform": {"tool": "onnx.helper", "version": "1", "settings": {"edit": name}},
        "rules": rules,
    }
    return {**entry, "drift_rules": drift} if drift else entry


def test_the_faithful_declaration_passes_and_the_report_shows_the_boxes(tmp_path: Path) -> None:
    report = verify(write_detector_bundle(tmp_path / "b"))
    assert report.status() == "pass", [f.message for f in report.findings]
    (rule,) = report.comparisons[0].rules
    assert rule.answer == "objects" and rule.check == "detections" and rule.measured == 1.0
    shown = {a.case: a.answers["objects"] for a in report.answers}
    assert len(shown) == 6 and all(item[0]["detections"] for item in shown.values())
    box = shown["photo-0"][0]["detections"][0]
    assert set(box) == {"box", "label", "score"} and box["label"] in CLASSES
    assert 0 <= box["box"][0] < box["box"][2] <= 64  # raw pixels: the 64 x 40 photo, not the 32 x 32 tensor


def test_a_box_lost_at_the_threshold_fails_its_rule_while_the_raw_cosine_passes(tmp_path: Path) -> None:
    """The planted variant lowers one anchor's logits by 0.4: its 'person' falls under 0.25 in one photo only. The
    raw output's cosine stays >= 0.999 on every case; the rule on the answer names the case, label and scores."""
    rules = [{"answer": "objects", "check": "detections", "iou": 0.5}]
    cosine = [{"output": "output0", "check": "cosine", "min": 0.999}]
    weakened = detector(weaken=6, by=0.4)
    root = write_detector_bundle(
        tmp_path / "b", variants=[variant("weak", rules, cosine)], graphs={"weak.onnx": weakened}
    )
    report = verify(root)
    judged, drifted = report.comparisons[1:]
    assert drifted.rules[0].check == "cosine" and drifted.rules[0].passed
    assert min(v for v in drifted.rules[0].cases.values() if v is not None) >= 0.999
    assert not judged.rules[0].passed and judged.rules[0].worst_case == "photo-0"
    (failure,) = [m for m in errors(report, "comparison.rule")]
    assert re.match(
        r"weak loses 'person' \(0\.\d+ → 0\.\d+\) in case 'photo-0': weak: rule on answer objects/detections", failure
    )
    assert [c.to_dict() for c in judged.changes] == [
        {"answer": "objects", "case": "photo-0", "change": judged.changes[0].change}
    ]


def test_allclose_fails_on_boxes_the_application_never_moves_while_the_answer_rule_passes(tmp_path: Path) -> None:
    rules = [
        {"output": "output0", "check": "allclose", "atol": 1e-3, "rtol": 1e-3},
        {"answer": "objects", "check": "detections", "iou": 0.5, "max_shift": 2.0},
    ]
    root = write_detector_bundle(
        tmp_path / "b", variants=[variant("moved", rules)], graphs={"moved.onnx": detector(jitter=0.1)}
    )
    report = verify(root)
    allclose, answer = report.comparisons[1].rules
    assert not allclose.passed and answer.passed and answer.answer == "objects"
    assert report.comparisons[1].changes == []


# Answer fidelity: the application's answers, made by an independent decoding (Ultralytics' semantics, the
# letterbox undone by hand), stored beside each case.


def application_answer(output0: np.ndarray, raw_h: int, raw_w: int, twice: bool = False) -> list[dict[str, Any]]:
    rows = output0[0].T.astype(np.float64)
    boxes = np.stack([rows[:, 0] - rows[:, 2] / 2, rows[:, 1] - rows[:, 3] / 2,
                      rows[:, 0] + rows[:, 2] / 2, rows[:, 1] + rows[:, 3] / 2], axis=1)  # fmt: skip
    scores = rows[:, 4:]
    if twice:
        scores = 1 / (1 + np.exp(-scores))
    kept = ultralytics_nms(boxes, scores, 0.25, 0.45, agnostic=False, max_det=300)
    long = max(raw_h, raw_w)
    new_h, new_w = (int(raw_h * SIZE / long + 0.5), SIZE) if raw_w >= raw_h else (SIZE, int(raw_w * SIZE / long + 0.5))
    top, left = (SIZE - new_h) // 2, (SIZE - new_w) // 2
    out = []
    for row, cls, score in kept:
        x1, y1, x2, y2 = boxes[row]
        raw = [
            (x1 - left) * raw_w / new_w,
            (y1 - top) * raw_h / new_h,
            (x2 - left) * raw_w / new_w,
            (y2 - top) * raw_h / new_h,
        ]
        raw = [min(max(v, 0.0), lim) for v, lim in zip(raw, (raw_w, raw_h, raw_w, raw_h))]
        out.append({"box": [round(v, 3) for v in raw], "label": CLASSES[cls], "score": round(score, 4)})
    return out


def store_answers(root: Path, twice: bool = False) -> None:
    from PIL import Image

    manifest = json.loads((root / "bundle.json").read_text())
    for case in manifest["comparison"]["cases"]:
        output0 = np.load(root / case["expected"]["output0"])
        with Image.open(root / case["raw"]["images"]) as image:
            w, h = image.size
        rel = f"cases/{case['name']}.objects.json"
        (root / rel).write_text(json.dumps(application_answer(output0, h, w, twice)))
        case["expected_answers"] = {"objects": rel}
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))


def test_the_stored_application_answers_are_proven(tmp_path: Path) -> None:
    root = write_detector_bundle(tmp_path / "b")
    store_answers(root)
    report = verify(root)
    assert report.status() == "pass", [f.message for f in report.findings]


@pytest.mark.parametrize(
    ("declared", "edit"),
    [
        ({"box_format": "xywh"}, "box_format cxcywh for xywh"),
        ({"to_raw": None}, "to_raw: images (boxes taken back to the raw image)"),
        ({"class_offset": 1}, "class_offset 0 for 1"),
        ({"nms": {"iou": 0.45, "class_aware": False}}, "nms class_aware true"),
    ],
)
def test_each_planted_mistake_of_the_declaration_is_named_by_its_edit(
    tmp_path: Path, declared: dict[str, Any], edit: str
) -> None:
    decode = {k: v for k, v in declared.items() if v is not None}
    answers = answers_block(**decode)
    if declared.get("to_raw", "images") is None:
        del answers[0]["decode"]["to_raw"]
    root = write_detector_bundle(tmp_path / "b", answers=answers)
    store_answers(root)
    report = verify(root)
    (finding,) = [f for f in report.findings if f.id in ("answers.fidelity", "answers.invalid")]
    # A class_offset off by one leaves a label too many: the declaration cannot be made at all, and the finding
    # names the edit that makes the stored answers.
    assert finding.id == ("answers.invalid" if "class_offset" in declared else "answers.fidelity"), finding.message
    assert edit in finding.details["edits"], finding.message
    assert finding.line is not None


def test_a_sigmoid_applied_twice_by_the_application_is_named(tmp_path: Path) -> None:
    root = write_detector_bundle(tmp_path / "b")
    store_answers(root, twice=True)
    report = verify(root)
    (finding,) = [f for f in report.findings if f.id == "answers.fidelity"]
    assert "a sigmoid applied twice" in " ".join(finding.details["edits"]), finding.message


def test_a_difference_no_single_edit_explains_is_said(tmp_path: Path) -> None:
    root = write_detector_bundle(tmp_path / "b")
    store_answers(root)
    stored = root / "cases" / "photo-1.objects.json"
    boxes = json.loads(stored.read_text())
    boxes[0]["label"] = "giraffe"
    stored.write_text(json.dumps(boxes))
    (finding,) = [f for f in verify(root).findings if f.id == "answers.fidelity"]
    assert "case 'photo-1'" in finding.message and "no single edit of the declaration explains it" in finding.message


def test_the_collapse_of_boxes_and_scores_under_one_scale_is_said_and_its_remedy_measured(tmp_path: Path) -> None:
    """onnxruntime's default static quantization gives the concatenated output one scale: the scores (0-1) keep a
    few levels beside the boxes' pixels. The diagnosis names the node and the two ranges, and measures the variant
    with the output left in float before it shows that remedy."""
    from realkit import quantized

    plain = write_detector_bundle(tmp_path / "plain")
    calibration = [np.load(p) for p in sorted((plain / "cases").glob("*.images.npy"))]
    int8 = quantized(plain / "model.onnx", tmp_path / "int8.onnx", static_from=calibration)
    import onnx

    entry = variant("int8", [{"answer": "objects", "check": "detections", "iou": 0.5}])
    entry["transform"] = {"tool": "onnxruntime.quantization.quantize_static", "version": "1.32.0",
                          "settings": {"quant_format": "QDQ"}}  # fmt: skip
    report = verify(write_detector_bundle(tmp_path / "b", variants=[entry], graphs={"int8.onnx": onnx.load(str(int8))}))
    assert not report.comparisons[1].rules[0].passed
    (said,) = [f for f in report.findings if f.id == "variant.diagnosis" and "collapse" in f.details]
    collapse = said.details["collapse"]
    assert collapse["node"] == "concat" and said.details["nodes_to_exclude"] == ["concat"]
    parts = {p["name"]: p for p in collapse["parts"]}
    assert parts["scores"]["levels"] <= 32 < parts["boxes"]["levels"]
    assert "measured with 'output0' left in float" in said.message and "case '" in said.message
