"""Workflow-command annotations: escaping, paths into the bundle, and the choice under GitHub's limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ghsupport import sample_report
from hypothesis import given
from hypothesis import strategies as st

from checker.findings import Finding
from checker.github.annotations import Annotation, bundle_root, escape_data, escape_property, inert, select
from checker.github.files import write_outputs
from checker.reports.model import Report


def test_data_and_properties_are_escaped_as_the_runner_expects() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c\n%") == "a%3Ab%2Cc%0A%25"
    line = Annotation("error", "bad\n::set-env name=X::1", "m/bundle.yaml", 3, "id (a,b:c)").command()
    assert line == "::error file=m/bundle.yaml,line=3,title=id (a%2Cb%3Ac)::bad%0A::set-env name=X::1"


@given(st.text())
def test_an_annotation_is_always_one_line(message: str) -> None:
    line = Annotation("warning", message, "f,:\n", 1, "t" + message).command()
    assert "\n" not in line and "\r" not in line
    assert line.startswith("::warning file=f%2C%3A%0A,line=1,title=")


@pytest.mark.parametrize(
    ("path", "root"),
    [
        ("models/a/bundle.yaml", "models/a"),
        ("models/a", "models/a"),
        ("./models/a/bundle.json", "models/a"),
        ("models/a.tar.gz", None),
        ("release.zip", None),
        ("/elsewhere/a", None),
    ],
)
def test_the_bundle_root_relative_to_the_workspace(path: str, root: str | None, tmp_path: Path) -> None:
    found = bundle_root(path, tmp_path)
    assert (found.as_posix() if found is not None else None) == root


def test_an_absolute_path_inside_the_workspace_is_made_relative(tmp_path: Path) -> None:
    assert str(bundle_root(str(tmp_path / "m" / "bundle.yaml"), tmp_path)) == "m"


def report_with(findings: list[dict[str, Any]]) -> Report:
    report = sample_report(failing=False)
    report.bundles[0].findings = [Finding.from_dict(f) for f in findings]
    return report


def test_a_file_outside_the_bundle_is_not_pointed_at(tmp_path: Path) -> None:
    findings = [
        {"id": "bundle.path", "severity": "error", "message": "m", "file": "../../etc/passwd", "line": 1},
        {"id": "bundle.path", "severity": "error", "message": "m", "file": "/etc/passwd", "line": 1},
        {"id": "bundle.path", "severity": "error", "message": "m", "file": "cases/a.npy"},
    ]
    chosen = select(report_with(findings), tmp_path).chosen
    assert [(a.file, a.line) for a in chosen] == [("models/mobilenet/cases/a.npy", None), (None, None), (None, None)]


def test_errors_with_a_line_and_distinct_ids_come_first(tmp_path: Path) -> None:
    findings = [{"id": "graph.io", "severity": "error", "message": f"io {i}"} for i in range(12)]
    findings += [{"id": "graph.io", "severity": "error", "message": "io at a line", "file": "bundle.yaml", "line": 9}]
    findings += [{"id": "labels.count", "severity": "error", "message": "labels"}]
    findings += [{"id": "graph.producer", "severity": "warning", "message": f"w{i}"} for i in range(3)]
    selection = select(report_with(findings), tmp_path, reserve={"warning": 1})
    errors = [a for a in selection.chosen if a.level == "error"]
    assert [a.message for a in errors[:3]] == ["io at a line", "labels", "io 0"]
    assert len(errors) == 10
    assert selection.left_out("error") == 4 and selection.left_out("warning") == 0
    assert "4 of 14 errors" in (selection.note() or "")


def test_outputs_survive_any_value(tmp_path: Path) -> None:
    path = tmp_path / "out"
    write_outputs(path, {"a": "x\nb<<EOF\ny", "b": ""})
    text = path.read_text(encoding="utf-8")
    first, second = text.split("\n")[0], text.split("\n")[5]
    delimiter = first.split("<<", 1)[1]
    assert first.startswith("a<<ghadelimiter_") and text.count(delimiter) == 2
    assert second.startswith("b<<ghadelimiter_")


def test_inert_text_starts_no_workflow_command_on_any_line() -> None:
    text = "Traceback\n  ::error::x\r::add-mask::y\r\n##[set-output name=a;]b\nplain :: text"
    lines = inert(text).split("\n")
    assert lines == ["Traceback", "|   ::error::x", "| ::add-mask::y", "#\u200b#[set-output name=a;]b", "plain :: text"]
