"""`checker diagnose --requantize` on real quantize_static variants: exclusion measured before it is advised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from modelkit import case, classifier, classifier_cases, images, quantize, run, variant_entry, write_bundle
from onnx import numpy_helper

from checker.cli import main
from checker.compare.divergence import changed_nodes

COSINE = [{"output": "logits", "check": "cosine", "min": 0.999}]
DRIFT = [{"output": "logits", "check": "score_drift", "max": 0.05, "apply": "softmax"}]


def with_outlier(model: onnx.ModelProto, name: str, index: tuple[int, ...], value: float) -> onnx.ModelProto:
    """One large weight: per-tensor int8 quantization of that layer then crushes all its other weights."""
    for tensor in model.graph.initializer:
        if tensor.name == name:
            array = numpy_helper.to_array(tensor).copy()
            array[index] = value
            tensor.CopyFrom(numpy_helper.from_array(array, name))
    return model


def diagnose(root: Path, capsys: pytest.CaptureFixture[str], variant: str = "int8") -> dict[str, Any]:
    code = main(["diagnose", str(root), "--variant", variant, "--requantize", "--format", "json"])
    assert code == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.fixture(scope="module")
def outlier_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The last layer holds an outlier weight: keeping it in float restores the scores."""
    root = tmp_path_factory.mktemp("outlier")
    model = with_outlier(classifier(spatial="width"), "wf", (3, 5), 30.0)
    onnx.save(model, str(root / "float.onnx"))
    cases = classifier_cases(model, 8)
    quantize(root / "float.onnx", root / "q.onnx", [c.inputs["pixels"] for c in cases])
    models = {"model.onnx": model, "int8.onnx": onnx.load(str(root / "q.onnx"))}
    variants = [variant_entry("int8", "int8.onnx", COSINE)]
    return write_bundle(root / "b", models, cases, [{"output": "logits", "check": "allclose"}], variants)


def test_an_exclusion_that_helps_is_recommended_with_its_figures(
    outlier_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = diagnose(outlier_bundle, capsys)["requantize"]
    shipped, recorded = done["tried"][0], done["tried"][1]
    assert not shipped["rules"][0]["passed"] and not recorded["rules"][0]["passed"]
    assert "fc" in done["recommended"]
    chosen = next(t for t in done["tried"][2:] if t["nodes_to_exclude"] == done["recommended"])
    assert chosen["rules"][0]["measured"] > recorded["rules"][0]["measured"]  # cosine: larger is better
    assert done["calibration_cases"] == [f"img-{i}" for i in range(8)]
    assert "recommended nodes_to_exclude=" in done["summary"] and "logits/cosine" in done["summary"]


def test_the_text_report_lists_every_attempt(outlier_bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(outlier_bundle), "--variant", "int8", "--requantize"]) == 0
    out = capsys.readouterr().out
    assert "the shipped variant" in out and "the recorded transform, re-run" in out
    assert "measured recommendation: nodes_to_exclude = [" in out and "'fc'" in out


@pytest.fixture(scope="module")
def miscalibrated_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Calibrated on a declared set of overexposed cases: every activation range is wrong, and keeping any one
    node in float does not bring the scores back."""
    root = tmp_path_factory.mktemp("miscalibrated")
    model = classifier(spatial="width")
    onnx.save(model, str(root / "float.onnx"))
    bright = [
        case(f"bright-{i}", {"pixels": x}, run(model, {"pixels": x}), 8 + i)
        for i, x in enumerate(images(8, seed=9, scale=100.0))
    ]
    normal = [case(f"img-{i}", {"pixels": x}, run(model, {"pixels": x}), i) for i, x in enumerate(images(8, seed=5))]
    cases = normal + bright
    quantize(root / "float.onnx", root / "q.onnx", [c.inputs["pixels"] for c in bright])
    models = {"model.onnx": model, "int8.onnx": onnx.load(str(root / "q.onnx"))}
    variant = variant_entry("int8", "int8.onnx", DRIFT)
    variant["transform"]["settings"]["calibration_cases"] = [c.name for c in bright]
    return write_bundle(root / "b", models, cases, [{"output": "logits", "check": "allclose"}], [variant])


def test_an_exclusion_that_does_not_help_is_not_recommended(
    miscalibrated_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = diagnose(miscalibrated_bundle, capsys)
    done = result["requantize"]
    assert result["nodes_to_exclude"], "the unmeasured diagnosis does name candidates"
    assert done["calibration_cases"] == [f"bright-{i}" for i in range(8)]
    recorded = done["tried"][1]
    assert not recorded["rules"][0]["passed"]
    excluding = [t for t in done["tried"][2:] if "settings" not in t]
    assert excluding and all(t["rules"][0]["measured"] >= recorded["rules"][0]["measured"] for t in excluding)
    assert done["recommended"] == []
    assert "none improves the failing rules" in done["summary"]
    # Keeping nodes in float cannot mend every range; a setting the search then measures does.
    found = done["found"]
    assert found["nodes_to_exclude"] == [] and found["settings"] and done["stopped"] == "passed"
    assert found["rules"][0]["before"] == recorded["rules"][0]["measured"] and found["rules"][0]["passed"]
    assert found["rules"][0]["after"] <= 0.05 < found["rules"][0]["before"]
    assert found["bytes"]["found"] > 0 and "median" in found["faster"]
    assert done["tried"][-1]["label"] == found["label"]  # it stopped there


def test_only_nodes_the_transform_changed_are_candidates(tmp_path: Path) -> None:
    model = classifier()
    onnx.save(model, str(tmp_path / "float.onnx"))
    quantize(tmp_path / "float.onnx", tmp_path / "q.onnx", images(4), nodes_to_exclude=["fc"])
    changed = changed_nodes(model, onnx.load(str(tmp_path / "q.onnx")))
    assert {"conv1", "conv2"} <= changed and "fc" not in changed
    assert np.isfinite(len(changed))


def test_a_search_cut_short_says_what_it_did_not_try(
    miscalibrated_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["diagnose", str(miscalibrated_bundle), "--variant", "int8", "--requantize", "--search-budget", "0.001"]
    assert main([*argv, "--format", "json"]) == 0
    done = json.loads(capsys.readouterr().out)["requantize"]
    assert done["stopped"] == "budget" and done["found"] is None
    assert "16-bit activations" in done["not_tried"] and len(done["tried"]) <= 3  # at most one step began
    assert "ran out of time before it tried: " in done["summary"]
    assert main(argv) == 0
    assert "the search stopped (budget) before it tried: " in capsys.readouterr().out


def test_the_search_goes_smallest_first_and_ranks_nodes_by_what_they_measure() -> None:
    from checker.compare.fixsearch import search, setting_changes
    from checker.reports.model import RuleResult

    def rule(figure: float) -> RuleResult:
        return RuleResult("y", "max_abs", {}, figure <= 1.0, 1.0, 1.0, None, figure, 1.0, None)

    class Judged:
        def __init__(self, label: str, figure: float) -> None:
            self.label, self.rules, self.error = label, [rule(figure)], None

    # Alone, b helps most and a a little, c not at all; together a and b pass; no setting helps.
    figures = {("a",): 4.0, ("b",): 3.0, ("c",): 6.0, ("b", "a"): 0.5}
    tried: list[str] = []

    def judge(step: tuple[str, list[str], dict[str, object]]) -> Judged:
        tried.append(step[0])
        return Judged(step[0], figures.get(tuple(step[1]), 5.0))

    changes = setting_changes("quantize_static", {"quant_format": "QDQ", "calibrate_method": "MinMax"})
    assert [label for label, _ in changes][:3] == ["16-bit activations", "reduce_range", "per-channel weights"]
    outcome = search(judge, Judged("recorded", 5.0), ["a", "b", "c"], changes, budget_s=60)
    assert outcome.stopped == "passed" and outcome.found.label == "excluding b, a"
    assert tried[:3] == ["excluding a", "excluding b", "excluding c"] and tried[-1] == "excluding b, a"
    assert tried[3:-1] == [label for label, _ in changes]
