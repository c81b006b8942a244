"""The class order: the example classifier's cases labelled with the class their reference picks, read through
a labels file in the right order (passes) and in a permuted one (`labels.order`, naming the swapped labels),
and the same graph with ArgMax appended so that its output is a class index, its labels declared as such."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import yaml
from bundlekit import write_manifest
from onnx import TensorProto, helper

from checker import findings as F
from checker.checks.labelorder import Evidence, implied_order, misplaced
from checker.context import Options
from checker.release.lock import lock
from checker.verify import verify_bundle


def _manifest(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((root / "bundle.yaml").read_text(encoding="utf-8"))
    return data


def _labels(root: Path) -> list[str]:
    return (root / "labels.txt").read_text(encoding="utf-8").split()


def _label_cases(root: Path, labels: list[str], output: str = "logits") -> dict[str, str]:
    """Each case's label: the class its stored reference output picks, in the file's right order."""
    data = _manifest(root)
    chosen = {}
    for case in data["comparison"]["cases"]:
        reference = np.load(root / case["expected"]["logits"])
        case["label"] = chosen[case["name"]] = labels[int(reference.argmax())]
    write_manifest(root, data)
    return chosen


def _verify(root: Path) -> dict[str, Any]:
    lock(root / "bundle.yaml")
    report: dict[str, Any] = verify_bundle(root, Options(gain_budget_s=0.0)).to_dict()
    return report


def _found(report: dict[str, Any], fid: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == fid]


def _write_labels(root: Path, labels: list[str]) -> None:
    (root / "labels.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")


def _swapped(labels: list[str], a: int, b: int) -> list[str]:
    out = list(labels)
    out[a], out[b] = out[b], out[a]
    return out


def test_the_right_order_passes(example: Path) -> None:
    chosen = _label_cases(example, _labels(example))
    assert set(chosen.values()) == {"cat", "eel"}  # the example's cases pick classes 0 and 9
    report = _verify(example)
    assert report["status"] == "pass", [f["message"] for f in report["findings"] if f["severity"] == "error"]
    assert _found(report, F.LABELS_ORDER) == []


def test_a_swap_both_halves_seen_is_named_with_the_order_the_cases_imply(example: Path) -> None:
    right = _labels(example)
    _label_cases(example, right)
    _write_labels(example, _swapped(right, 0, 9))
    report = _verify(example)
    assert report["status"] == "fail"
    (found,) = _found(report, F.LABELS_ORDER)
    assert found["severity"] == "error" and found["line"] is not None
    message = found["message"]
    assert "the reference says index 0 (`eel`) where case(s) 'meadow'" in message
    assert "expect `cat` (index 9)" in message
    assert "the reference says index 9 (`cat`)" in message and "expect `eel` (index 0)" in message
    assert found["details"]["implied"] == right


def test_a_swap_seen_from_one_side_is_named_when_cases_agree(example: Path) -> None:
    right = _labels(example)
    _label_cases(example, right)
    _write_labels(example, _swapped(right, 0, 1))  # `dog` now at 0, `cat` at 1; no case picks class 1
    report = _verify(example)
    (found,) = _found(report, F.LABELS_ORDER)
    assert "index 0 (`dog`) where case(s)" in found["message"] and "expect `cat` (index 1)" in found["message"]
    assert [m["index"] for m in found["details"]["misplaced"]] == [0]
    assert found["details"]["implied"] == right  # the one label displaced takes the one index freed


def test_a_reference_wrong_on_a_case_is_not_a_permuted_file(example: Path) -> None:
    right = _labels(example)
    _label_cases(example, right)
    data = _manifest(example)
    meadow = next(c for c in data["comparison"]["cases"] if c["name"] == "meadow")
    meadow["label"] = "eel"  # the application expects eel; the reference picks cat, as the other cat cases
    write_manifest(example, data)
    report = _verify(example)
    assert _found(report, F.LABELS_ORDER) == []


def test_a_label_outside_the_file_is_named_with_its_case(example: Path) -> None:
    _label_cases(example, _labels(example))
    data = _manifest(example)
    data["comparison"]["cases"][1]["label"] = "zebra"
    write_manifest(example, data)
    (found,) = _found(_verify(example), F.LABELS_INVALID)
    assert "case 'harbour'" in found["message"] and "'zebra'" in found["message"] and found["line"] is not None


def evidence(*pairs: tuple[int, str, int]) -> Evidence:
    out = Evidence()
    for index, label, items in pairs:
        for n in range(items):
            out.add(index, label, f"{label}-{index}-{n}")
    return out


LABELS = ["cat", "dog", "fox", "owl"]


def test_one_lone_disagreement_is_a_wrong_reference() -> None:
    # One item at index 2 expecting `owl`: nothing corroborates a reordered file.
    assert misplaced(LABELS, evidence((0, "cat", 5), (2, "owl", 1))) == []


def test_a_minority_at_an_index_is_a_wrong_reference() -> None:
    assert misplaced(LABELS, evidence((0, "cat", 5), (0, "dog", 2), (1, "dog", 3))) == []


def test_one_class_in_two_places_is_a_wrong_reference() -> None:
    assert misplaced(LABELS, evidence((0, "cat", 5), (2, "cat", 3))) == []


def test_a_three_cycle_is_found_and_its_order_implied() -> None:
    # The file holds dog, fox, cat at 0..2 where the classes are cat, dog, fox.
    file = ["dog", "fox", "cat", "owl"]
    found = misplaced(file, evidence((0, "cat", 1), (1, "dog", 1), (2, "fox", 1), (3, "owl", 4)))
    assert [(m.index, m.label) for m in found] == [(0, "cat"), (1, "dog"), (2, "fox")]
    assert implied_order(file, found) == LABELS


def _argmax_graph(source: Path, dest: Path) -> None:
    """The example graph with ArgMax over its logits: its one output is the class index of each item."""
    model = onnx.load(str(source))
    graph = model.graph
    logits = graph.output[0].name
    graph.node.append(helper.make_node("ArgMax", [logits], ["class_index"], axis=-1, keepdims=0))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("class_index", TensorProto.INT64, ["batch"]))
    onnx.checker.check_model(model)
    onnx.save(model, str(dest))


def _index_bundle(root: Path, labels_file: list[str]) -> dict[str, int]:
    """The example as an index-valued classifier: ArgMax graph, reference class indices, no variants."""
    right = _labels(root)
    _argmax_graph(root / "model.onnx", root / "model.onnx")
    data = _manifest(root)
    picked = {}
    for case in data["comparison"]["cases"]:
        reference = np.load(root / case["expected"]["logits"])
        index = reference.argmax(axis=-1).astype(np.int64)
        picked[case["name"]] = int(index[0])
        path = case["expected"]["logits"].replace("logits.npy", "class_index.npy")
        np.save(root / path, index)
        (root / case["expected"]["logits"]).unlink()
        case["expected"] = {"class_index": path}
        case["label"] = right[int(index[0])]
    data["outputs"] = [
        {
            "name": "class_index",
            "dtype": "int64",
            "shape": ["batch"],
            "meaning": "other",
            "labels": {"path": "labels.txt", "values": "index"},
        }
    ]
    data["comparison"]["rules"] = [
        {"output": "class_index", "check": "exact"},
        {"output": "class_index", "check": "accuracy", "k": 1, "min": 0.99},
    ]
    data.pop("variants", None)
    data["graph"].pop("sha256", None)
    (root / "model.int8.onnx").unlink()
    write_manifest(root, data)
    _write_labels(root, labels_file)
    return picked


def test_an_argmax_output_with_its_labels_declared_passes_and_feeds_the_task_rules(example: Path) -> None:
    picked = _index_bundle(example, _labels(example))
    assert set(picked.values()) == {0, 9}
    report = _verify(example)
    assert report["status"] == "pass", [f["message"] for f in report["findings"] if f["severity"] == "error"]
    rules = next(c["rules"] for c in report["comparisons"] if c["graph"] == "baseline")
    accuracy = next(r for r in rules if r["check"] == "accuracy")
    assert accuracy["passed"] and accuracy["measured"] == 1.0 and accuracy["statistics"]["items"] == 8


def test_an_argmax_output_with_a_permuted_file_fails_labels_order_and_its_accuracy(example: Path) -> None:
    right = _labels(example)
    _index_bundle(example, _swapped(right, 0, 9))  # the cases keep the application's names
    report = _verify(example)
    (found,) = _found(report, F.LABELS_ORDER)
    assert "'class_index'" in found["message"] and "index 0 (`eel`)" in found["message"]
    assert "expect `cat` (index 9)" in found["message"]
    assert found["details"]["implied"] == right
    rules = next(c["rules"] for c in report["comparisons"] if c["graph"] == "baseline")
    accuracy = next(r for r in rules if r["check"] == "accuracy")
    assert not accuracy["passed"] and accuracy["measured"] == 0.0


def test_a_class_index_outside_the_file_is_labels_count(example: Path) -> None:
    _index_bundle(example, _labels(example)[:5])  # the cases pick index 9
    found = _found(_verify(example), F.LABELS_COUNT)
    assert found and "class index 9" in found[0]["message"] and found[0]["details"]["actual"] == 5


@pytest.mark.parametrize("bad", [{"values": "index", "axis": -1}, {"values": "scores"}])
def test_the_schema_refuses_an_axis_with_index_values_and_unknown_values(example: Path, bad: dict[str, Any]) -> None:
    data = _manifest(example)
    data["outputs"][0]["labels"] = {"path": "labels.txt", **bad}
    write_manifest(example, data)
    report = verify_bundle(example, Options(gain_budget_s=0.0)).to_dict()
    assert _found(report, F.MANIFEST_SCHEMA)


def test_a_rotated_file_gets_no_order_the_cases_cannot_show(example: Path) -> None:
    """Rotated by one, the file's two classes the cases pick are misplaced; an order closed by a guess (the one
    label left over put at the one index freed) would itself misplace 8 of the 10 names, so none is suggested."""
    from checker.remedies import remedy

    right = _labels(example)
    _label_cases(example, right)
    rotated = right[1:] + right[:1]
    _write_labels(example, rotated)
    guess = implied_order(rotated, misplaced(rotated, _evidence(right)))
    assert guess is not None and sum(a != b for a, b in zip(guess, right)) == 8  # what was suggested before
    report = verify_bundle(example, Options(gain_budget_s=0.0, fix_budget_s=0.0))
    (found,) = [f for f in report.findings if f.id == F.LABELS_ORDER]
    assert found.details["implied"] is None and found.details["unseen"] == 8
    assert "no case picks the 8 other index(es), so the cases imply no whole order" in found.message
    said = remedy(found, report.path, report.findings)
    assert said.startswith("put `cat` at index 0, `eel` at index 9, as the cases show;")
    assert "8 other indices" in said and ", ".join(guess) not in said


def test_an_order_is_suggested_only_when_the_cases_hold_it() -> None:
    from checker.checks.labelorder import checked

    file = ["dog", "fox", "cat", "owl"]
    seen = evidence((0, "cat", 1), (1, "dog", 1), (2, "fox", 1), (3, "owl", 4))
    assert checked(file, implied_order(file, misplaced(file, seen)), seen) == LABELS  # every index shown
    one_side = evidence((0, "cat", 3))
    swapped = ["dog", "cat", "fox", "owl"]
    assert checked(swapped, implied_order(swapped, misplaced(swapped, one_side)), one_side) == LABELS
    assert checked(LABELS, ["dog", "cat", "fox", "owl"], one_side) is None  # it would misplace a case's class


def _evidence(right: list[str]) -> Evidence:
    """The example's cases: class 0 (`cat`) and class 9 (`eel`), as their references pick them."""
    return evidence((0, right[0], 4), (9, right[9], 4))
