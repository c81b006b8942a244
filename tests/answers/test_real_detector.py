"""NudeNet's YOLOv8n detector (a PyPI wheel's ONNX file) with the package's own decoding as the application: its
stored answers are proven, a declaration with one mistake is named by its edit, its default static int8
quantization, which squeezes box pixels and 0-1 scores under one output scale, fails on the boxes it loses, a variant
whose raw output keeps a cosine of 0.999 but moves one box across the score threshold fails `checker verify` on that
box, and a variant whose every box stays passes on its answers where allclose on the raw tensor fails it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from realkit import half_weights, nudenet_labels, nudenet_module, quantized, run, scaled_scores, variant, write_nudenet

from checker.context import Options
from checker.verify import verify_bundle

pytestmark = pytest.mark.native_only

Cli = Callable[..., tuple[int, str, str]]


def verify(root: Path) -> Any:
    return verify_bundle(root, Options(gain_budget_s=0.0))


def test_the_package_s_own_answers_are_what_the_declaration_makes(tmp_path: Path) -> None:
    report = verify(write_nudenet(tmp_path / "b"))
    assert report.status() == "pass", [f.message for f in report.findings if f.severity.value != "info"]
    astronaut = next(a for a in report.answers if a.case == "astronaut").answers["objects"][0]["detections"]
    assert any(d["label"] == "FACE_FEMALE" for d in astronaut)


@pytest.mark.parametrize(
    ("declared", "edit"),
    [
        ({"box_format": "xywh"}, "box_format cxcywh for xywh"),
        ({"to_raw": None}, "to_raw: images (boxes taken back to the raw image)"),
    ],
)
def test_a_mistaken_declaration_is_named_by_its_edit(tmp_path: Path, declared: dict[str, Any], edit: str) -> None:
    report = verify(write_nudenet(tmp_path / "b", answers_decode=declared))
    (finding,) = [f for f in report.findings if f.id == "answers.fidelity"]
    assert edit in finding.details["edits"], finding.message


def test_the_default_static_int8_quantization_fails_on_the_boxes_it_loses(tmp_path: Path) -> None:
    """quantize_static's default QDQ puts the concatenated boxes (pixels) and scores (0-1) under one scale: every
    score becomes 0 or about 1.25, detections under about 0.63 vanish, and the raw output's cosine stays high."""
    import numpy as np

    plain = write_nudenet(tmp_path / "plain", stored=False)
    calibration = [np.load(p) for p in sorted((plain / "cases").glob("*.images.npy"))]
    int8 = quantized(plain / "model.onnx", tmp_path / "int8.onnx", static_from=calibration)
    rules = [{"answer": "objects", "check": "detections", "iou": 0.5}]
    settings = {"quant_format": "QDQ", "per_channel": False}
    entry = variant("int8", "int8.onnx", rules, settings)
    entry["drift_rules"] = [{"output": "output0", "check": "cosine", "min": 0.99}]
    root = write_nudenet(tmp_path / "b", variants=[entry], graphs={"int8.onnx": int8})
    scores = run(int8, {"images": calibration[0]})["output0"][0, 4:]
    assert len(np.unique(np.round(scores, 3))) <= 3  # the collapse itself: a few levels left for the scores
    report = verify(root)
    judged, drifted = report.comparisons[1:]
    assert drifted.rules[0].passed  # the raw tensor's cosine does not see it
    assert not judged.rules[0].passed and judged.changes
    failure = next(f.message for f in report.findings if f.id == "comparison.rule")
    assert failure.startswith("int8 loses '") or failure.startswith("int8 gains '") or " becomes " in failure


@pytest.mark.parametrize(
    ("label", "factor", "case", "change"),
    [
        # the one covered breast shown, at 0.331 in the flipped astronaut, falls to 0.232 under the 0.25 threshold
        ("FEMALE_BREAST_COVERED", 0.7, "astronaut-flipped", "loses"),
        # the best buttocks anchor on the coffee cup, at 0.221 and discarded, rises to 0.266 and is shown
        ("BUTTOCKS_EXPOSED", 1.2, "coffee", "gains"),
    ],
)
def test_a_box_moved_across_the_threshold_fails_checker_verify_while_the_raw_cosine_stays_above_0_999(
    cli: Cli, tmp_path: Path, label: str, factor: float, case: str, change: str
) -> None:
    """One class's score row of the real graph scaled after its last node: the same on every CPU (a Mul in float32,
    no kernel that differs by instruction set), it leaves the pixel rows alone and the raw tensor's cosine at 0.999 or
    more on every photo, while the application shows one box more or less on one photo."""
    plain = write_nudenet(tmp_path / "plain", stored=False)
    labels = nudenet_labels(nudenet_module())
    scaled = scaled_scores(plain / "model.onnx", tmp_path / "scaled.onnx", labels.index(label), factor)
    cosines = {}
    for path in sorted((plain / "cases").glob("*.images.npy")):
        feeds = {"images": np.load(path)}
        before = run(plain / "model.onnx", feeds)["output0"].astype(np.float64).ravel()
        after = run(scaled, feeds)["output0"].astype(np.float64).ravel()
        cosines[path.name.split(".")[0]] = before @ after / (np.linalg.norm(before) * np.linalg.norm(after))
    assert len(cosines) == 7 and min(cosines.values()) >= 0.999, cosines
    rules = [
        {"answer": "objects", "check": "detections", "iou": 0.5},
        {"output": "output0", "check": "cosine", "min": 0.999},
    ]
    entry = variant("recal", "recal.onnx", rules, {})
    entry["transform"] = {
        "tool": "onnx.helper: one class's scores scaled",
        "version": "1",
        "settings": {"factor": factor},
    }
    root = write_nudenet(tmp_path / "b", variants=[entry], graphs={"recal.onnx": scaled})
    code, out, _ = cli("verify", root, "--format", "json", "--gain-budget", "0")
    bundle = json.loads(out)["bundles"][0]
    assert code == 1 and bundle["status"] == "fail"
    judged = {rule["check"]: rule for rule in bundle["comparisons"][1]["rules"]}
    answers, cosine = judged["detections"], judged["cosine"]
    assert cosine["passed"] and min(cosine["cases"].values()) >= 0.999
    assert answer_failed_on(answers, case)
    errors = [f for f in bundle["findings"] if f["severity"] == "error"]
    assert [f["id"] for f in errors] == ["comparison.rule"], [f["message"] for f in errors]
    scores = r"\((0\.\d+) → (0\.\d+)\)"
    said = re.match(
        rf"recal {change} '{label}' {scores} in case '{case}': recal: rule on answer objects/detections",
        errors[0]["message"],
    )
    assert said, errors[0]["message"]
    before, after = float(said[1]), float(said[2])
    assert (before >= 0.25 > after) if change == "loses" else (before < 0.25 <= after)
    assert after == pytest.approx(before * factor, abs=2e-3)  # the scale itself, to the three digits shown
    (shown,) = bundle["comparisons"][1]["changes"]  # the one answer that changed, kept for the summary
    assert shown["answer"] == "objects" and shown["case"] == case and shown["change"] in errors[0]["message"]


def answer_failed_on(rule: dict[str, Any], case: str) -> bool:
    """The detections rule failed on that one photo and passed on the six others."""
    failed = [name for name, figure in rule["cases"].items() if figure < 1.0]
    return rule["check"] == "detections" and not rule["passed"] and failed == [case] and rule["worst_case"] == case


def test_allclose_fails_on_the_raw_tensor_while_every_box_the_application_shows_stays(tmp_path: Path) -> None:
    """Weights rounded to float16 move the box rows (pixels) of all 2,100 anchors by up to about a pixel, most of
    them anchors the application discards: allclose fails every photo, the boxes shown are the same."""
    plain = write_nudenet(tmp_path / "plain", stored=False)
    half = half_weights(plain / "model.onnx", tmp_path / "half.onnx")
    rules = [
        {"output": "output0", "check": "allclose", "atol": 1e-3, "rtol": 1e-3},
        {"answer": "objects", "check": "detections", "iou": 0.5},
    ]
    entry = variant("half", "half.onnx", rules, {})
    entry["transform"] = {"tool": "numpy round-trip of the weights", "version": "1", "settings": {"mantissa_bits": 10}}
    report = verify(write_nudenet(tmp_path / "b", variants=[entry], graphs={"half.onnx": half}))
    allclose, answer = report.comparisons[1].rules
    assert not allclose.passed and allclose.pass_rate == 0.0  # every photo fails on the raw tensor
    assert answer.answer == "objects" and answer.passed and answer.measured == 1.0
    assert report.comparisons[1].changes == []
