"""What changed since the base: two real reports of one bundle whose int8 variant was quantized again.

The base is the example bundle (a float graph and its int8 variant from onnxruntime.quantization). The head
quantizes the variant again, per tensor and calibrated on one dark case only, and drops a case; so the
int8 figures move, the graph and comparison-inputs pieces change, and a case is removed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from bundlekit import run_in
from ruamel.yaml import YAML

from checker.manifest.schema import load
from checker.reports.parts.changes import BundleChange

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mobilenet-tiny"


def requantize(bundle: Path, calibration: list[np.ndarray]) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.items: Iterator[dict[str, np.ndarray]] = iter([{"pixel_values": t} for t in calibration])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.items, None)

    quantize_static(
        str(bundle / "model.onnx"),
        str(bundle / "model.int8.onnx"),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=False,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
    )


def drop_case(bundle: Path, name: str) -> None:
    yaml = YAML()
    manifest = bundle / "bundle.yaml"
    data = yaml.load(manifest.read_text(encoding="utf-8"))
    cases = data["comparison"]["cases"]
    cases.pop(next(i for i, c in enumerate(cases) if c["name"] == name))
    with manifest.open("w", encoding="utf-8") as out:
        yaml.dump(data, out)
    shutil.rmtree(bundle / "cases" / name)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base.json and head.json: the same bundle path, before and after the variant was quantized again."""
    root = tmp_path_factory.mktemp("repo")
    bundle = root / "models" / "m"
    shutil.copytree(EXAMPLE, bundle)
    assert run_in(root, "verify", "models/m", "--format", "json", "--output", "base.json") == 0
    dark = np.load(bundle / "cases" / "dusk" / "pixel_values.npy")
    (bundle / "model.int8.onnx").unlink()
    requantize(bundle, [dark])
    drop_case(bundle, "overexposed")
    assert run_in(root, "lock", "models/m") == 0
    run_in(root, "verify", "models/m", "--format", "json", "--output", "head.json")
    return root


def report(root: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / name).read_text(encoding="utf-8"))
    return data


def rule(data: dict[str, Any], graph: str, against: str, check: str) -> dict[str, Any]:
    comparison = next(c for c in data["bundles"][0]["comparisons"] if (c["graph"], c["against"]) == (graph, against))
    found: dict[str, Any] = next(r for r in comparison["rules"] if r["check"] == check)
    return found


def test_report_diff_gives_each_rules_old_and_new_figure(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    run_in(repo, "report", "diff", "base.json", "head.json", "--format", "json")
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, load("report"))  # the report schema knows the changes section
    (entry,) = out["changes"]["bundles"]
    assert entry["path"] == "models/m" and entry["state"] == "changed"
    assert set(entry["pieces"]) == {"variants.int8", "comparison_inputs"}  # the variant's graph, and a case fewer
    assert entry["cases"] == {"added": [], "removed": ["overexposed"]}
    base, head = report(repo, "base.json"), report(repo, "head.json")
    for graph, against, check in (("int8", "reference", "score_drift"), ("int8", "baseline", "cosine")):
        change = next(r for r in entry["rules"] if (r["graph"], r["against"], r["check"]) == (graph, against, check))
        old, new = rule(base, graph, against, check), rule(head, graph, against, check)
        assert (change["base"], change["head"]) == (old["measured"], new["measured"])
        assert change["delta"] == pytest.approx(new["measured"] - old["measured"])
        assert change["threshold"] == new["threshold"]
        expected = {(True, False): "now fails", (False, True): "now passes"}.get((old["passed"], new["passed"]))
        assert change["crossed"] == expected
    drift = next(r for r in entry["rules"] if r["check"] == "score_drift")
    assert drift["delta"] != 0  # quantized again on one dark case, per tensor: the drift moved
    baseline = next(r for r in entry["rules"] if (r["graph"], r["check"]) == ("baseline", "allclose"))
    assert baseline["base"] == rule(base, "baseline", "reference", "allclose")["measured"]
    said = {(f["id"], f["message"]) for f in head["bundles"][0]["findings"]}
    was = {(f["id"], f["message"]) for f in base["bundles"][0]["findings"]}
    assert {(f["id"], f["message"]) for f in entry["findings"]["new"]} == said - was
    assert {(f["id"], f["message"]) for f in entry["findings"]["resolved"]} == was - said


def test_markdown_and_text_show_the_deltas_and_a_chart(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    run_in(repo, "report", "diff", "base.json", "head.json", "--format", "markdown")
    md = capsys.readouterr().out
    old = rule(report(repo, "base.json"), "int8", "reference", "score_drift")["measured"]
    new = rule(report(repo, "head.json"), "int8", "reference", "score_drift")["measured"]
    row = f"| int8 logits score_drift | {old:.4g} | {new:.4g} | {new - old:+.4g} | 0.05 |"
    assert row in md
    assert "changed pieces: comparison inputs, the variant int8's graph" in md and "cases removed: overexposed" in md
    # The chart draws the rules with an upper bound that moved, when there are two or more (one is its row) measured
    # against different thresholds (against one, the table's figures compare as they stand).
    run_in(repo, "report", "diff", "base.json", "head.json", "--format", "json")
    entry = json.loads(capsys.readouterr().out)["changes"]["bundles"][0]
    moved = [
        r
        for r in BundleChange.from_dict(entry).changed_rules
        if r.direction == "max" and None not in (r.base, r.head) and (r.threshold or 0) > 0
    ]
    thresholds = {t for r in moved[:8] for t in (r.threshold, r.base_threshold) if t is not None}
    if len(moved) >= 2 and len(thresholds) >= 2:
        chart = md[md.index("Chart: each changed rule at the base and at the head") :].split("```")[1]
        assert chart.count("\n  bar [") == 4 and "line [" in chart
        assert chart.count(' base"') == chart.count(' head"') == min(len(moved), 8)
    else:
        assert "```mermaid" not in md
    run_in(repo, "report", "diff", "base.json", "head.json")
    text = capsys.readouterr().out
    assert f"int8 logits score_drift: {old:.4g} -> {new:.4g} ({new - old:+.4g})" in text


def test_verify_compare_to_adds_the_same_changes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    run_in(repo, "verify", "models/m", "--compare-to", "base.json", "--format", "json")
    verified = json.loads(capsys.readouterr().out)
    run_in(repo, "report", "diff", "base.json", "head.json", "--format", "json")
    diffed = json.loads(capsys.readouterr().out)
    assert verified["changes"]["bundles"][0]["rules"] == diffed["changes"]["bundles"][0]["rules"]
    assert verified["changes"]["bundles"][0]["pieces"] == ["comparison_inputs", "variants.int8"]


def test_a_report_that_is_not_a_report_is_a_usage_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "bad.json").write_text('{"bundles": "no"}', encoding="utf-8")
    assert run_in(repo, "report", "diff", "bad.json", "head.json") == 2
    assert "does not match the report schema" in capsys.readouterr().err
