"""No silent skip: a check that could not run shows in the verdict line, fails --strict, and blocks `pack`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from releasekit import Cli

IMAGE_NOT_RUN = {"check": "image fidelity", "reason": "needs Pillow ([image])"}


@pytest.fixture
def without_pillow(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on an install without the [image] extra: importing PIL fails."""
    for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "PIL", None)


def test_a_check_that_could_not_run_is_in_the_verdict_line(example: Path, cli: Cli, without_pillow: None) -> None:
    code, out, _ = cli("verify", example)
    assert code == 0
    verdict = out.splitlines()[0]
    assert verdict.startswith("PASS: 1 of 1 bundle passes"), out
    assert verdict.endswith(" — 1 check not run: image fidelity: needs Pillow ([image])"), out


def test_the_json_report_lists_it(example: Path, cli: Cli, without_pillow: None) -> None:
    code, out, _ = cli("verify", example, "--format", "json")
    assert code == 0
    bundle = json.loads(out)["bundles"][0]
    assert bundle["not_run"] == [IMAGE_NOT_RUN] and bundle["status"] == "pass"


def test_strict_fails_it(example: Path, cli: Cli, without_pillow: None) -> None:
    code, out, _ = cli("verify", example, "--strict", "--format", "json")
    assert code == 1
    assert json.loads(out)["bundles"][0]["status"] == "fail"


def test_markdown_names_it_in_the_verdict(example: Path, cli: Cli, without_pillow: None) -> None:
    code, out, _ = cli("verify", example, "--format", "markdown")
    assert code == 0
    heading = next(line for line in out.splitlines() if line.startswith("## "))
    assert heading.endswith("passed — 1 check not run: image fidelity: needs Pillow (&#91;image&#93;)"), heading


def test_pack_refuses_a_bundle_whose_checks_did_not_all_run(
    example: Path, tmp_path: Path, cli: Cli, without_pillow: None
) -> None:
    archive = tmp_path / "out.tar.gz"
    code, _, err = cli("pack", example, "-o", archive)
    assert code == 1 and "not every check ran here (1 check not run: image fidelity: needs Pillow" in err
    assert not archive.exists()


def test_with_every_library_nothing_is_listed(example: Path, cli: Cli) -> None:
    code, out, _ = cli("verify", example, "--format", "json")
    assert code == 0 and json.loads(out)["bundles"][0]["not_run"] == []


def test_junit_marks_it_skipped(example: Path, cli: Cli, without_pillow: None) -> None:
    import xml.etree.ElementTree as ET

    code, out, _ = cli("verify", example, "--format", "junit")
    assert code == 0
    case = next(c for c in ET.fromstring(out).iter("testcase") if c.get("name") == "image fidelity")
    skipped = case.find("skipped")
    assert skipped is not None and skipped.get("message") == "not run: needs Pillow ([image])"
