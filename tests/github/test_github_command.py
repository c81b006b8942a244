"""`checker github comment` and `checker github run`, in-process through the CLI, against a loopback GitHub."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fakegithub import READ_ONLY, TOKEN, FakeGitHub
from ghsupport import HEAD, sample_json

from checker.cli import main

RUN_HEAD = "3484a3fb816e0859fd6e1cea078d76385ff50625"


@pytest.fixture
def report_file(tmp_path: Path) -> Path:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(sample_json()), encoding="utf-8")
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, github: FakeGitHub) -> pytest.MonkeyPatch:
    for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_RUN_ID", "GITHUB_ACTIONS", "INPUT_GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return monkeypatch


def test_a_dry_run_prints_the_request_without_the_token(
    env: pytest.MonkeyPatch, github: FakeGitHub, report_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    github.add_pull(2, HEAD)
    code = main(["github", "comment", str(report_file), "--repo", "octo-org/octo-repo", "--pr", "2", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"POST {github.url}/repos/octo-org/octo-repo/issues/2/comments" in out
    assert "Authorization: Bearer ***" in out
    assert "ONNX release check" in out
    assert TOKEN not in out + err
    assert github.requests("POST") == [] and github.requests("GET")  # it read, and wrote nothing


def test_comment_creates_then_leaves_an_unchanged_comment_alone(
    env: pytest.MonkeyPatch, github: FakeGitHub, report_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    github.add_pull(2, HEAD)
    argv = ["github", "comment", str(report_file), "--repo", "octo-org/octo-repo", "--pr", "2", "--head-sha", HEAD]
    assert main(argv) == 0
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "#2: created" in out and "#2: unchanged" in out
    assert len(github.comments[2]) == 1


def test_a_read_only_token_is_explained(
    env: pytest.MonkeyPatch, github: FakeGitHub, report_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    github.add_pull(2, HEAD)
    env.setenv("GITHUB_TOKEN", READ_ONLY)
    assert main(["github", "comment", str(report_file), "--repo", "octo-org/octo-repo", "--pr", "2"]) == 2
    err = capsys.readouterr().err
    assert "read-only" in err and "mode: verify-only" in err
    assert READ_ONLY not in err


def test_a_report_that_is_not_a_report_is_refused(
    env: pytest.MonkeyPatch, github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = sample_json()
    bad["bundles"][0]["findings"][0]["severity"] = "<img src=x>"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert main(["github", "comment", str(path), "--repo", "octo-org/octo-repo", "--pr", "2"]) == 2
    assert "does not match the report schema at bundles/0/findings/0/severity" in capsys.readouterr().err
    path.write_text("[1, 2", encoding="utf-8")
    assert main(["github", "comment", str(path), "--repo", "octo-org/octo-repo", "--pr", "2"]) == 2
    assert "is not JSON" in capsys.readouterr().err
    assert github.seen == []


def test_run_in_comment_only_mode_posts_the_report_for_the_triggering_run(
    env: pytest.MonkeyPatch, github: FakeGitHub, tmp_path: Path, event_file: Callable[..., Path]
) -> None:
    github.add_pull(2, RUN_HEAD)
    report = sample_json()
    report["context"] = {"head_sha": RUN_HEAD, "pull_request": 2}
    path = tmp_path / "untrusted" / "checker-report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(report), encoding="utf-8")
    outputs = tmp_path / "outputs"
    env.setenv("GITHUB_EVENT_NAME", "workflow_run")
    env.setenv("GITHUB_EVENT_PATH", str(event_file("workflow_run.completed")))
    env.setenv("GITHUB_REPOSITORY", "octo-org/octo-repo")
    env.setenv("GITHUB_OUTPUT", str(outputs))
    env.setenv("INPUT_MODE", "comment-only")
    env.setenv("INPUT_REPORT", str(path))
    env.setenv("INPUT_FAIL_ON", "never")
    assert main(["github", "run"]) == 0
    assert len(github.comments[2]) == 1
    assert "comment-url<<" in outputs.read_text(encoding="utf-8")


def test_a_bad_input_still_leaves_a_summary_and_outputs(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs, summary = tmp_path / "outputs", tmp_path / "summary.md"
    env.chdir(tmp_path)
    env.setenv("GITHUB_OUTPUT", str(outputs))
    env.setenv("GITHUB_STEP_SUMMARY", str(summary))
    env.setenv("INPUT_BUNDLES", "models/*/bundle.yaml")  # matches nothing here
    assert main(["github", "run"]) == 2
    assert "ONNX release check: not verified" in summary.read_text(encoding="utf-8")
    assert "status<<" in outputs.read_text(encoding="utf-8") or "status=fail" in outputs.read_text(encoding="utf-8")
    assert "models/*/bundle.yaml" in capsys.readouterr().err


def test_github_without_a_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["github"]) == 2
    assert "run" in capsys.readouterr().err


def test_the_command_module_imports_nothing_heavy() -> None:
    code = "import sys, checker.github.command; print(sorted({'requests', 'onnx', 'onnxruntime'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _crashing_stage(ctx: object) -> Iterator[object]:
    raise ZeroDivisionError("a bug")
    yield  # a stage is a generator


def test_an_internal_error_still_posts_the_report(
    env: pytest.MonkeyPatch, tmp_path: Path, example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Exit 3 writes the report with an internal.error finding naming the stage: the action summarises it.
    from checker import verify as verify_module

    _crashing_stage.__name__ = "runtime_stage"
    env.setattr(verify_module, "AFTER_SCHEMA", (*verify_module.AFTER_SCHEMA[:4], _crashing_stage))
    outputs, summary = tmp_path / "outputs", tmp_path / "summary.md"
    env.setenv("GITHUB_OUTPUT", str(outputs))
    env.setenv("GITHUB_STEP_SUMMARY", str(summary))
    env.setenv("INPUT_MODE", "verify-only")
    env.setenv("INPUT_BUNDLES", str(example))
    env.setenv("INPUT_REPORT", str(tmp_path / "checker-report.json"))
    assert main(["github", "run"]) == 3
    assert "internal error in the 'runtime' stage" in summary.read_text(encoding="utf-8")
    report = json.loads((tmp_path / "checker-report.json").read_text(encoding="utf-8"))
    assert report["bundles"][0]["findings"][-1]["id"] == "internal.error"
    assert "ZeroDivisionError" in capsys.readouterr().err
