"""The shipped example: reproducible byte for byte from its script, small, and passing."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

from bundlekit import EXAMPLE, REPO

from checker.context import Options
from checker.verify import verify_bundle


def test_example_script_reproduces_the_shipped_bundle(tmp_path: Path) -> None:
    out = tmp_path / "again"
    subprocess.run([sys.executable, REPO / "examples" / "make_mobilenet_tiny.py", out], check=True, capture_output=True)
    shipped = sorted(p.relative_to(EXAMPLE) for p in EXAMPLE.rglob("*") if p.is_file())
    rebuilt = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert shipped == rebuilt
    _, mismatch, errors = filecmp.cmpfiles(EXAMPLE, out, [str(p) for p in shipped], shallow=False)
    assert mismatch == [] and errors == []


def test_example_is_small_and_passes() -> None:
    assert sum(p.stat().st_size for p in EXAMPLE.rglob("*") if p.is_file()) < 2 << 20
    report = verify_bundle(EXAMPLE, Options())
    assert report.status(strict=True) == "pass", [f.message for f in report.findings]
    assert [c.graph for c in report.comparisons] == ["baseline", "int8", "int8"]
    assert all(c.status == "pass" for c in report.comparisons)


DETECTOR = REPO / "examples" / "tiny-detector"


def test_the_detector_example_script_reproduces_the_shipped_bundle(tmp_path: Path) -> None:
    out = tmp_path / "again"
    subprocess.run([sys.executable, REPO / "examples" / "make_tiny_detector.py", out], check=True, capture_output=True)
    shipped = sorted(p.relative_to(DETECTOR) for p in DETECTOR.rglob("*") if p.is_file())
    assert shipped == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    _, mismatch, errors = filecmp.cmpfiles(DETECTOR, out, [str(p) for p in shipped], shallow=False)
    assert mismatch == [] and errors == []


def test_the_detector_example_is_judged_on_its_boxes_and_passes() -> None:
    assert sum(p.stat().st_size for p in DETECTOR.rglob("*") if p.is_file()) < 1 << 20
    report = verify_bundle(DETECTOR, Options())
    assert report.status(strict=True) == "pass", [f.message for f in report.findings]
    assert [c.graph for c in report.comparisons] == ["baseline", "int8", "int8"]
    int8 = report.comparisons[1].rules[0]
    assert int8.answer == "objects" and int8.check == "detections" and int8.passed
    assert {a.case for a in report.answers} == {"street", "park", "doorway", "crossing", "night", "glare"}
