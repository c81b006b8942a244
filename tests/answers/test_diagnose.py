"""`checker diagnose` on a variant that fails a rule on an answer starts from the case verify diagnoses and the box
that changed there, before the tensors."""

from __future__ import annotations

from pathlib import Path

import pytest
from answerkit import detector, write_detector_bundle
from test_detections import variant

from checker.diagnose.command import render_text
from checker.diagnose.investigate import investigate

pytest.importorskip("PIL")


def test_the_diagnosis_starts_from_the_box_that_changed(tmp_path: Path) -> None:
    rules = [{"answer": "objects", "check": "detections", "iou": 0.5}]
    root = write_detector_bundle(
        tmp_path / "b", variants=[variant("weak", rules)], graphs={"weak.onnx": detector(weaken=6, by=0.4)}
    )
    result = investigate(root, "weak", None)
    assert result["case"] == "photo-0"  # the failing answer rule's worst case, as verify picks it
    (changed,) = result["answers_changed"]
    assert changed.startswith("answer 'objects': loses 'person' (0.")
    assert render_text(result).startswith("on case 'photo-0': answer 'objects': loses 'person'")
