"""Text from a hostile bundle or report on a terminal, and a hostile report read back from JSON."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import rewrite_manifest

from checker.findings import error
from checker.render import render
from checker.reports.files import ReportError, read_report
from checker.reports.model import BundleReport, Report

ESCAPES = "\x1b[2J\x1b]0;owned\x07\r\nPASS: 1 of 1 bundle passes"


def test_case_names_cannot_drive_the_terminal(example: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    # A case name that clears the screen, retitles the window and prints a verdict line of its own.
    rewrite_manifest(example, lambda d: [c.update(name=ESCAPES) for c in d["comparison"]["cases"][:2]])
    code, out, _ = cli("verify", example, "--format", "text")
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert "\\x1b[2J\\x1b]0;owned\\x07\\x0d\\x0aPASS" in out
    assert not any(line.startswith("PASS") for line in out.splitlines())


def test_the_text_report_of_a_deeply_nested_report_renders(tmp_path: Path) -> None:
    nested: object = 1
    for _ in range(5_000):
        nested = [nested]
    report = Report("0", [BundleReport(path="b", findings=[error("x.y", "m", deep=nested)])])
    assert "x.y" in render("text", report)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "report.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_deeply_nested_report_file_is_a_report_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="nests too deeply"):
        read_report(_write(tmp_path, '{"a":' * 100_000 + "1" + "}" * 100_000))


def test_nan_in_a_report_file_is_not_json(
    tmp_path: Path, example: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    cli("verify", example, "--format", "json", "--output", tmp_path / "good.json")
    good = (tmp_path / "good.json").read_text(encoding="utf-8")
    assert read_report(tmp_path / "good.json")["status"] == "pass"
    with pytest.raises(ReportError, match="NaN is not a JSON value"):
        read_report(_write(tmp_path, good.replace('"pass_rate": 1.0', '"pass_rate": NaN', 1)))


def test_error_lines_cannot_drive_the_terminal(
    tmp_path: Path, example: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    # The usage error lists the manifest's input names, as the manifest spells them.
    rewrite_manifest(example, lambda d: d["inputs"][0].update(name="\x1b]0;owned\x07pixels"))
    photo = example / "cases/meadow/photo.png"
    code, _, err = cli("preprocess", example, "--input", "other", photo, "-o", tmp_path / "x.npy")
    assert code == 2 and "\\x1b]0;owned\\x07pixels" in err
    assert "\x1b" not in err and "\x07" not in err
