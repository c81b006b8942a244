"""The drift rule `checker variant add` proposes on each answer: held at the worst case's distance from the
baseline's answer with headroom, the defaults kept where every case agrees, none where the answers part."""

from __future__ import annotations

from checker.manifest.model.answers import Answers
from checker.manifest.model.build import build
from checker.release.measure import Figure
from checker.release.proposal import Planned, plan, propose


def _figures(*values: float) -> list[Figure]:
    return [Figure(f"case{i}", v, "here") for i, v in enumerate(values)]


def test_each_answer_the_variants_outputs_make_gets_a_drift_rule() -> None:
    answers = [
        {"name": "objects", "kind": "detections", "from": "output0", "decode": {"layout": "yolo"}},
        {"name": "top", "kind": "classes", "from": "logits"},
        {"name": "said", "kind": "text", "from": "logits", "decode": {"ctc": {}}},  # no measured share to propose from
        {"name": "other", "kind": "classes", "from": "missing"},
    ]
    planned = plan([], set(), {"output0", "logits"}, build(Answers, answers))
    assert [p.rule for p in planned] == [
        {"answer": "objects", "check": "detections", "iou": 0.5},
        {"answer": "top", "check": "classes"},
    ]
    assert planned[0].measuring() == {**planned[0].rule, "min_recall": 0.0, "min_precision": 0.0, "min_pass_rate": 0.0}


def test_detections_that_agree_keep_the_default_bounds_and_others_get_the_worst_with_headroom() -> None:
    rule = Planned("drift_rules", {"answer": "objects", "check": "detections", "iou": 0.5})
    assert propose(rule, _figures(1.0, 1.0)).rule == {"answer": "objects", "check": "detections", "iou": 0.5}
    lower = propose(rule, _figures(1.0, 0.9)).rule
    assert lower == {"answer": "objects", "check": "detections", "iou": 0.5, "min_recall": 0.8, "min_precision": 0.8}


def test_an_embedding_bound_is_a_number_of_nines_and_answers_that_part_get_none() -> None:
    embedding = Planned("drift_rules", {"answer": "sentence", "check": "embedding"})
    assert propose(embedding, _figures(0.99893, 0.9995)).rule == {
        "answer": "sentence", "check": "embedding", "min_cosine": 0.99
    }  # fmt: skip
    classes = Planned("drift_rules", {"answer": "top", "check": "classes"})
    parted = propose(classes, _figures(0.2))
    assert parted.rule is None and "answer 'top' differs from the baseline's on case0" in parted.note
