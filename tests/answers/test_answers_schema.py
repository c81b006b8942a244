"""The committed manifest schema holds the answers' blocks exactly as the model generates them, and validates the
answer fields with their bounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from checker.manifest.model.answers import ANSWER_RULES, Answers, ExpectedAnswers
from checker.manifest.model.build import build
from checker.manifest.model.generate import block_schema, schema_of
from checker.manifest.model.root import Spec

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "manifest.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def test_the_committed_schema_is_the_models() -> None:
    assert SCHEMA["properties"]["answers"] == schema_of(Answers)
    case = SCHEMA["properties"]["comparison"]["properties"]["cases"]["items"]["properties"]
    assert case["expected_answers"] == schema_of(ExpectedAnswers)
    rule = SCHEMA["properties"]["comparison"]["properties"]["rules"]["items"]
    branches = {b["if"]["properties"]["check"]["const"]: b["then"] for b in rule["allOf"]}
    for block in ANSWER_RULES:
        made = {k: v for k, v in block_schema(block).items() if k not in ("title", "description", "type")}
        made["properties"] = {**made["properties"], "check": rule["properties"]["check"]}
        assert branches[block.TAG] == made, block.TAG
    variants = SCHEMA["properties"]["variants"]["items"]["properties"]
    assert variants["rules"]["items"] == rule == variants["drift_rules"]["items"]


def manifest(answers: list[dict[str, Any]], rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "manifest_version": 1,
        "release": {"name": "m", "version": "1"},
        "answers": answers,
        "comparison": {
            "reference": {"description": "x"},
            "cases": [{"name": "a", "inputs": {"x": "x.npy"}, "expected": {"y": "y.npy"},
                       "expected_answers": {"top": "a.json"}}],
            "rules": rules or [{"answer": "top", "check": "classes"}],
        },
    }  # fmt: skip


TOP = {"name": "top", "kind": "classes", "from": "y", "steps": [{"apply": "softmax"}], "decode": {"top_k": 3}}


def errors(data: dict[str, Any]) -> list[str]:
    return [e.message for e in VALIDATOR.iter_errors(data)]


def test_a_whole_answers_block_validates_and_builds() -> None:
    people = {
        "name": "people", "kind": "detections", "from": ["boxes", "scores"],
        "steps": [
            {"transpose": {"perm": [0, 2, 1], "output": "scores"}},
            {"apply": {"function": "sigmoid", "output": "scores"}},
        ],
        "decode": {
            "layout": "boxes_scores", "box_format": "xyxy", "nms": {"iou": 0.5, "class_aware": False}, "to_raw": "x"
        },
    }  # fmt: skip
    text = {"name": "line", "kind": "text", "from": "logits", "decode": {"ctc": {"blank": 0}}}
    data = manifest([TOP, people, text], [{"answer": "people", "check": "detections", "iou": 0.7, "max_shift": 3}])
    assert errors(data) == []
    spec = build(Spec, data)
    assert spec.answers is not None and spec.answers[1].from_ == ["boxes", "scores"]
    assert spec.answers[1].steps[0].perm == [0, 2, 1]  # type: ignore[union-attr]
    assert spec.answers[0].steps[0].function == "softmax"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"kind": "boxes"}, "'boxes' is not one of"),
        ({"decode": {"top_k": 0}}, "0 is less than the minimum of 1"),
        ({"decode": {"top_k": 1, "nms": {}}}, "Additional properties are not allowed"),
        ({"steps": [{"apply": "tanh"}]}, "is not valid"),
        ({"steps": [{"select": {"axis": 0, "index": 1, "start": 0}}]}, "should not be valid"),
        ({"name": "a b"}, "does not match"),
        ({"steps": [{"pool": {"mode": "mean", "axis": 99}}]}, "is greater than the maximum"),
    ],
)
def test_a_block_outside_the_bounds_is_refused(change: dict[str, Any], said: str) -> None:
    found = errors(manifest([{**TOP, **change}]))
    assert found and any(said in e for e in found), found


def test_a_rule_on_an_answer_takes_only_its_kinds_parameters() -> None:
    assert errors(manifest([TOP], [{"answer": "top", "check": "classes", "max_cer": 0}]))
    assert errors(manifest([TOP], [{"answer": "top", "check": "allclose"}]))  # a tensor rule needs output
    assert errors(manifest([TOP], [{"output": "y", "check": "classes"}]))  # and an answer rule an answer
    assert errors(manifest([TOP], [{"answer": "top", "check": "decision", "max_flips": -1}]))
    assert not errors(manifest([TOP], [{"answer": "top", "check": "decision", "max_flips": 2}]))
