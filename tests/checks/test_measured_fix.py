"""A failing quantized variant's first fix is measured inside `checker verify` before it is shown.

Real quantize_static variants whose calibration data was scaled wrongly (100 times too bright): the drift they
make (above 0.2) fails a tight limit (0.05) on every CPU. The visible fix, applied as it says, makes the rule pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
import pytest
from modelkit import case, classifier, good_and_miscalibrated_bundle, images, quantize, run, variant_entry, write_bundle

from checker.compare.quantizing import requantize_to
from checker.context import Options
from checker.findings import Finding
from checker.manifest.model.build import build
from checker.manifest.model.variants import Transform
from checker.reports.model import BundleReport, Report
from checker.verify import verify_bundle

DRIFT = [{"output": "logits", "check": "score_drift", "max": 0.05, "apply": "softmax"}]


def first_fix(bundle: BundleReport, variant: str) -> str:
    """The visible fix of the variant's failed rule, as the Markdown comment shows it."""
    from checker.render.markdown import render

    md = render(Report("0.1.0", [bundle]))
    lines = md.splitlines()
    at = next(i for i, line in enumerate(lines) if f"{variant}: rule " in line and "**comparison.rule**" in line)
    return next(line for line in lines[at:] if "**Fix:**" in line).split("**Fix:** ", 1)[1]


def diagnosis(bundle: BundleReport, variant: str) -> Finding:
    return next(f for f in bundle.findings if f.id == "variant.diagnosis" and f.details.get("variant") == variant)


def statuses(bundle: BundleReport, variant: str) -> set[str]:
    return {c.status for c in bundle.comparisons if c.graph == variant}


def apply(root: Path, variant: str, changed: dict[str, Any]) -> None:
    """Re-quantize the variant as its fix says: the recorded transform with `changed` set over its settings, the
    graph replaced and the record made true."""
    manifest = root / "bundle.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    entry = next(v for v in data["variants"] if v["name"] == variant)
    entry["transform"]["settings"].update(changed)
    ctx_cases = verify_cases(root)
    transform = build(Transform, entry["transform"])
    requantize_to(transform, ctx_cases, root / "model.onnx", root / entry["graph"]["path"], {})
    manifest.write_text(json.dumps(data), encoding="utf-8")


def verify_cases(root: Path) -> list[Any]:
    """The bundle's cases as verify loads them, for the calibration."""
    from checker.checks.cases import cases_stage
    from checker.context import Context
    from checker.manifest.load import load_manifest

    manifest, _ = load_manifest(root / "bundle.json")
    assert manifest is not None
    ctx = Context(root, manifest, Options())
    list(cases_stage(ctx))
    return ctx.cases or []


def test_when_the_recorded_transform_re_run_passes_the_first_fix_says_the_graph_is_not_what_its_record_makes(
    tmp_path: Path,
) -> None:
    root = good_and_miscalibrated_bundle(tmp_path)
    bundle = verify_bundle(root, Options(gain_budget_s=0.0))
    assert statuses(bundle, "int8-bad") == {"fail"}
    fix = first_fix(bundle, "int8-bad")
    assert fix.startswith("the shipped graph is not what its record makes: quantize it again as recorded")
    assert "logits score_drift " in fix and "(max 0.05), passes." in fix
    measured = diagnosis(bundle, "int8-bad").details["measured"]
    assert measured["outcome"] == "recorded"
    (rule,) = measured["rules"]
    assert rule["before"] > 0.05 >= rule["after"] and rule["passed"]
    apply(root, "int8-bad", {})  # quantized again as recorded
    again = verify_bundle(root, Options(gain_budget_s=0.0, fix_budget_s=0.0))
    assert statuses(again, "int8-bad") == {"pass"}


@pytest.fixture(scope="module")
def miscalibrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The record itself names the overexposed cases as the calibration: re-running it as recorded fails too."""
    root = tmp_path_factory.mktemp("miscalibrated")
    model = classifier(spatial="width")
    onnx.save(model, str(root / "float.onnx"))
    bright = [
        case(f"bright-{i}", {"pixels": x}, run(model, {"pixels": x}), 8 + i)
        for i, x in enumerate(images(8, seed=9, scale=100.0))
    ]
    normal = [case(f"img-{i}", {"pixels": x}, run(model, {"pixels": x}), i) for i, x in enumerate(images(8, seed=5))]
    quantize(root / "float.onnx", root / "q.onnx", [c.inputs["pixels"] for c in bright])
    variant = variant_entry("int8", "int8.onnx", DRIFT)
    variant["transform"]["settings"]["calibration_cases"] = [c.name for c in bright]
    models = {"model.onnx": model, "int8.onnx": onnx.load(str(root / "q.onnx"))}
    return write_bundle(root / "b", models, normal + bright, [{"output": "logits", "check": "allclose"}], [variant])


def test_a_setting_the_search_measured_is_the_first_fix_and_applied_it_passes(miscalibrated: Path) -> None:
    bundle = verify_bundle(miscalibrated, Options(gain_budget_s=0.0, fix_budget_s=120.0))
    assert statuses(bundle, "int8") == {"fail"}
    measured = diagnosis(bundle, "int8").details["measured"]
    assert measured["outcome"] == "found" and measured["settings"] and measured["nodes_to_exclude"] == []
    fix = first_fix(bundle, "int8")
    assert fix.startswith("re-quantize with `") and ": measured, logits score_drift " in fix and ", passes." in fix
    assert "nodes_to_exclude" not in fix.split(":", 1)[0]  # no node kept in float was shown first unmeasured
    apply(miscalibrated, "int8", measured["settings"])
    again = verify_bundle(miscalibrated, Options(gain_budget_s=0.0, fix_budget_s=0.0))
    assert statuses(again, "int8") == {"pass"}


def test_without_a_budget_the_fix_says_it_was_not_measured_and_how_to_measure_it(tmp_path: Path) -> None:
    root = good_and_miscalibrated_bundle(tmp_path)
    bundle = verify_bundle(root, Options(gain_budget_s=0.0, fix_budget_s=0.0))
    measured = diagnosis(bundle, "int8-bad").details["measured"]
    assert measured == {"outcome": "not_run", "reason": "the search for a measured fix was turned off: --fix-budget 0"}
    fix = first_fix(bundle, "int8-bad")
    assert fix.startswith("not measured: `checker diagnose ") and "--variant int8-bad --requantize`" in fix


def test_a_record_the_quantizer_refuses_is_said_not_raised(tmp_path: Path) -> None:
    """A pull request's record with settings the quantizer cannot take: the fix says it was not measured, and why."""
    root = good_and_miscalibrated_bundle(tmp_path)
    manifest = root / "bundle.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    bad = next(v for v in data["variants"] if v["name"] == "int8-bad")
    bad["transform"]["settings"]["extra_options"] = ["not", "a", "mapping"]
    manifest.write_text(json.dumps(data), encoding="utf-8")
    bundle = verify_bundle(root, Options(gain_budget_s=0.0))
    assert not [f for f in bundle.findings if f.id == "internal.error"]
    measured = diagnosis(bundle, "int8-bad").details["measured"]
    assert measured["outcome"] == "not_run" and "could not be re-run" in measured["reason"]
    assert first_fix(bundle, "int8-bad").startswith("not measured: `checker diagnose ")


@pytest.mark.parametrize(
    ("outcome", "ended"),
    [("budget", "the search ran out of its 20 s of CPU time"), ("none", "no change the search tried passes")],
)
def test_a_search_that_found_nothing_says_so_with_the_re_runs_figure(outcome: str, ended: str) -> None:
    from checker.findings import error, info
    from checker.remedies import remedy

    measured = {
        "outcome": outcome,
        "tool": "quantize_static",
        "budget_s": 20.0,
        "rules": [{"output": "logits", "check": "score_drift", "before": 0.35, "after": 0.35, "limit": 0.05,
                   "direction": "max", "passed": False}],
        "tried": ["16-bit activations", "reduce_range"],
        "not_tried": ["per-channel weights"],
    }  # fmt: skip
    failed = error("comparison.rule", "int8 failed", graph="int8", worst_case="dusk")
    ran = info("variant.diagnosis", "diagnosis: ...", variant="int8", case="dusk", nodes_to_exclude=["conv1"],
               measured=measured)  # fmt: skip
    said = remedy(failed, "models/m", [failed, ran])
    assert said.startswith("not measured to pass: re-running the recorded transform gives logits score_drift 0.35 ")
    assert f"(max 0.05), fails, and {ended} (tried: 16-bit activations; reduce_range)." in said
    assert "`checker diagnose models/m --variant int8 --requantize` searches further" in said
    assert "nodes_to_exclude" not in said  # never an exclusion no one measured
