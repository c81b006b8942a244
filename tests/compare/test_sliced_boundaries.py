"""A tag-sliced rule's export/transform split is measured inside its slice: a reference wrong outside the slice
does not make the export boundary look broken for a rule that never judges that case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from modelkit import classifier, classifier_cases, images, quantize, variant_entry, write_bundle

from checker.context import Options
from checker.verify import verify_bundle

EDGE = ["edge"]  # write_bundle tags the first case alone


def test_the_split_of_a_sliced_rule_counts_only_its_cases(tmp_path: Path) -> None:
    model = classifier()
    onnx.save(model, str(tmp_path / "float.onnx"))
    quantize(tmp_path / "float.onnx", tmp_path / "q.onnx", images(8, seed=9))
    cases = classifier_cases(model, 4)
    # int8 never reproduces the float logits to 1e-6: the transform fails the rule on every CPU.
    rules = [{"output": "logits", "check": "max_abs", "max": 1e-6, "tags": EDGE}]
    variant = variant_entry("int8", "int8.onnx", rules)
    models = {"model.onnx": model, "int8.onnx": onnx.load(str(tmp_path / "q.onnx"))}
    baseline_rules = [{"output": "logits", "check": "allclose", "tags": EDGE}]
    root = write_bundle(tmp_path / "b", models, cases, baseline_rules, [variant])
    wrong = root / "comparison" / "img-2" / "logits.npy"  # a reference off by 10 on a case outside the slice
    np.save(wrong, np.load(wrong) + 10.0)
    report = verify_bundle(root, Options(gain_budget_s=0.0, fix_budget_s=0.0))
    (failed,) = [f for f in report.findings if f.id == "comparison.rule"]
    assert "export (baseline vs reference) measures 0 and passes" in failed.message
    assert "the transform introduced the error" in failed.message
    (rule,) = next(c for c in report.comparisons if c.graph == "int8").rules
    assert rule.tags == EDGE and set(rule.cases) == {"img-0"}
