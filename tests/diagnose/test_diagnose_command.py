"""Whole commands on a bundle on disk: `checker verify` with variants and `checker diagnose`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from modelkit import good_and_miscalibrated_bundle

from checker.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mobilenet-tiny"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return good_and_miscalibrated_bundle(tmp_path_factory.mktemp("bundle"))


def json_out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_verify_reports_each_boundary(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = json_out(capsys, ["verify", str(bundle), "--format", "json"])
    assert code == 1
    (b,) = report["bundles"]
    comparisons = {(c["graph"], c["against"]): c for c in b["comparisons"]}
    assert comparisons[("baseline", "reference")]["status"] == "pass"
    assert comparisons[("int8", "reference")]["status"] == "pass"
    bad = comparisons[("int8-bad", "reference")]
    assert bad["status"] == "fail"
    assert [r["passed"] for r in bad["rules"]] == [True, False]
    assert bad["diagnosis"]["first"]["tensor"] == "pixels"
    errors = [f for f in b["findings"] if f["severity"] == "error"]
    assert [f["id"] for f in errors] == ["comparison.rule"]
    assert errors[0]["file"] == "bundle.json" and isinstance(errors[0]["line"], int)
    assert "the transform introduced the error" in errors[0]["message"]


def test_diagnose_text(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(bundle), "--variant", "int8-bad"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("int8-bad against the baseline on case 'img-")
    assert "pixels (graph input, quantized for conv1) <- first" in out
    assert "nodes_to_exclude = ['conv1']" in out


def test_diagnose_json_on_a_chosen_case(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, result = json_out(
        capsys, ["diagnose", str(bundle), "--variant", "int8", "--case", "img-1", "--format", "json", "--min-db", "5"]
    )
    assert code == 0
    assert result["case"] == "img-1" and result["min_db"] == 5.0
    assert result["compared"] == len(result["tensors"]) > 0


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--variant", "fp16"], "no variant 'fp16' in the manifest (variants: int8, int8-bad)"),
        (["--variant", "int8", "--case", "nope"], "no case 'nope'"),
    ],
)
def test_diagnose_usage_errors(bundle: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    assert main(["diagnose", str(bundle), *argv]) == 2
    assert words in capsys.readouterr().err


def test_diagnose_refuses_a_bundle_it_cannot_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bundle.json").write_text("{not json")
    assert main(["diagnose", str(tmp_path), "--variant", "x"]) == 2
    assert "manifest.parse" in capsys.readouterr().err
    assert main(["diagnose", str(tmp_path / "missing"), "--variant", "x"]) == 2


def test_start_up_imports_neither_onnx_nor_onnxruntime() -> None:
    code = (
        "import sys\nfrom checker.cli import build_parser\nbuild_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('onnx', 'onnxruntime')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_verify_and_diagnose_diagnose_the_same_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example's int8 with its score_drift rule tightened until it fails: its worst case by that rule is not
    the case of the lowest SQNR, and both commands take the rule's (one failure, one diagnosis)."""
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    manifest = root / "bundle.yaml"
    text = manifest.read_text(encoding="utf-8")
    assert "check: score_drift, max: 0.05" in text
    manifest.write_text(text.replace("check: score_drift, max: 0.05", "check: score_drift, max: 0.0001"), "utf-8")
    assert main(["lock", str(root)]) == 0
    capsys.readouterr()
    code, report = json_out(capsys, ["verify", str(root), "--format", "json"])
    assert code == 1
    (b,) = report["bundles"]
    failed = next(f for f in b["findings"] if f["id"] == "comparison.rule")
    diagnosis = next(f for f in b["findings"] if f["id"] == "variant.diagnosis")
    assert diagnosis["details"]["case"] == failed["details"]["worst_case"]
    code, result = json_out(capsys, ["diagnose", str(root), "--variant", "int8", "--format", "json"])
    assert code == 0
    assert result["case"] == diagnosis["details"]["case"]
