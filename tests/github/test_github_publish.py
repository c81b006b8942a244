"""publish(): summary, annotations, comment, outputs and exit status, in the order of the contract."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakegithub import BOT, READ_ONLY, TOKEN, FakeGitHub
from ghsupport import HEAD, sample_report

from checker.github.api import Client
from checker.github.config import Config, Secret
from checker.github.publish import publish, verdict

RUN_HEAD = "3484a3fb816e0859fd6e1cea078d76385ff50625"


def read_outputs(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT as the runner reads it: `name<<DELIMITER` blocks."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines) - 1:
        name, _, delimiter = lines[i].partition("<<")
        end = lines.index(delimiter, i + 1)
        values[name] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return values


@pytest.fixture
def config(tmp_path: Path, github: FakeGitHub, event_file: Callable[..., Path]) -> Callable[..., Config]:
    def make(event: str = "pull_request.synchronize", name: str = "pull_request", **kwargs: Any) -> Config:
        values: dict[str, Any] = {
            "api_url": github.url,
            "repository": "octo-org/octo-repo",
            "event_name": name,
            "event_path": event_file(event),
            "sha": "f" * 40,
            "run_id": "500",
            "run_attempt": "1",
            "workspace": tmp_path,
            "step_summary": tmp_path / "summary.md",
            "output": tmp_path / "output.txt",
            "token": Secret(TOKEN),
        }
        values.update(kwargs)
        return Config(**values)

    return make


def test_a_failing_report_comments_annotates_summarises_and_fails(
    github: FakeGitHub, make_client: Callable[..., Client], config: Callable[..., Config]
) -> None:
    github.add_pull(2, HEAD)
    cfg = config()
    result = publish(cfg, sample_report(), "checker-report.json", make_client(github))
    assert result.code == 1 and result.status == "fail" and result.failed == 1
    assert result.problems == []
    assert [o.action for o in result.outcomes] == ["created"]
    assert (
        "::error file=models/mobilenet/bundle.yaml,line=30,title=bundle.missing_piece (mobilenet-v2)::"
        in result.lines[0]
    )
    assert result.lines[1].startswith("::warning file=models/mobilenet/bundle.yaml,line=8,")
    summary = cfg.step_summary.read_text(encoding="utf-8")  # type: ignore[union-attr]
    assert summary.startswith("## ❌ ONNX release check: 1 of 1 bundle failed")
    outputs = read_outputs(cfg.output)  # type: ignore[arg-type]
    assert outputs == {
        "status": "fail",
        "report": "checker-report.json",
        "failed": "1",
        "comment-url": github.ours(2)[0]["html_url"],
        "attestation": "",  # attest is off
    }


@pytest.mark.parametrize(
    ("fail_on", "failing", "code", "status"),
    [
        ("error", False, 0, "pass"),
        ("warning", False, 1, "fail"),
        ("never", True, 0, "fail"),
        ("error", True, 1, "fail"),
    ],
)
def test_the_exit_status_follows_fail_on(
    fail_on: str, failing: bool, code: int, status: str, config: Callable[..., Config]
) -> None:
    cfg = config(fail_on=fail_on, mode="verify-only")
    result = publish(cfg, sample_report(failing=failing), "r.json", None)
    assert (result.code, result.status) == (code, status)
    assert read_outputs(cfg.output)["status"] == status  # type: ignore[arg-type]


def test_a_forks_read_only_token_is_a_warning_that_says_what_to_do(
    github: FakeGitHub, make_client: Callable[..., Client], config: Callable[..., Config]
) -> None:
    github.add_pull(2, HEAD)
    cfg = config(token=Secret(READ_ONLY), fail_on="never")
    result = publish(cfg, sample_report(), "r.json", make_client(github, token=READ_ONLY))
    assert result.code == 0  # the verdict alone decides; fail-on never
    assert len(result.problems) == 1
    assert "mode: verify-only" in result.problems[0] and "comment-only" in result.problems[0]
    assert "pull-requests: write" in result.problems[0]
    warning = [line for line in result.lines if line.startswith("::warning title=Pull-request comment not written::")]
    assert len(warning) == 1
    assert "Resource not accessible by integration" in cfg.step_summary.read_text(encoding="utf-8")  # type: ignore[union-attr]
    assert read_outputs(cfg.output)["comment-url"] == ""  # type: ignore[arg-type]


def test_the_api_down_is_a_warning_and_the_verdict_stands(
    github: FakeGitHub, make_client: Callable[..., Client], config: Callable[..., Config]
) -> None:
    github.add_pull(2, HEAD)
    github.fail("*", ".", status=503, times=100)
    result = publish(config(), sample_report(failing=False), "r.json", make_client(github))
    assert result.code == 0
    assert "not answering" in result.problems[0]


def test_no_token_is_a_warning(config: Callable[..., Config]) -> None:
    result = publish(config(token=None), sample_report(failing=False), "r.json", None)
    assert result.code == 0
    assert "github-token" in result.problems[0]


def test_annotations_are_limited_and_the_rest_counted_in_the_summary(
    github: FakeGitHub, make_client: Callable[..., Client], config: Callable[..., Config]
) -> None:
    github.add_pull(2, HEAD)
    cfg = config()
    result = publish(cfg, sample_report(findings=25), "r.json", make_client(github))
    errors = [line for line in result.lines if line.startswith("::error ")]
    assert len(errors) == 10
    assert errors[0].startswith("::error file=models/mobilenet/bundle.yaml,line=30,title=bundle.missing_piece")
    summary = cfg.step_summary.read_text(encoding="utf-8")  # type: ignore[union-attr]
    assert "16 of 26 errors are not annotated" in summary


def test_hostile_text_cannot_forge_workflow_commands_or_outputs(config: Callable[..., Config]) -> None:
    report = sample_report(name="evil\n::set-output name=status::pass")
    findings = report.bundles[0].findings
    findings[0] = dataclasses.replace(findings[0], message="line one\r\n::add-mask::x\n%0A")
    cfg = config(mode="verify-only", report="a\nstatus=pass")
    result = publish(cfg, report, "a\nstatus=pass", None)
    assert all("\n" not in line and "\r" not in line for line in result.lines)
    assert "line one%0D%0A::add-mask::x%0A%250A" in result.lines[0]
    assert "title=bundle.missing_piece (evil%0A%3A%3Aset-output name=status%3A%3Apass)" in result.lines[0]
    outputs = read_outputs(cfg.output)  # type: ignore[arg-type]
    assert outputs["status"] == "fail" and outputs["report"] == "a\nstatus=pass"


def test_comment_only_posts_an_untrusted_report_for_the_run_that_made_it(
    github: FakeGitHub, make_client: Callable[..., Client], config: Callable[..., Config]
) -> None:
    github.add_pull(2, RUN_HEAD)
    report = sample_report()
    report.context = {"head_sha": RUN_HEAD, "pull_request": 2, "bundle_set": "models/*/bundle.yaml"}
    cfg = config(event="workflow_run.completed", name="workflow_run", mode="comment-only")
    result = publish(cfg, report, "r.json", make_client(github))
    assert [o.action for o in result.outcomes] == ["created"]
    assert not any(line.startswith("::error") for line in result.lines)  # the fork's run annotated already
    assert github.ours(2)[0]["user"]["login"] == BOT


def test_comment_only_refuses_a_report_about_another_commit(
    github: FakeGitHub, make_client: Callable[..., Client], config: Callable[..., Config]
) -> None:
    github.add_pull(2, RUN_HEAD)
    report = sample_report()
    report.context = {"head_sha": "0" * 40, "pull_request": 2}
    cfg = config(event="workflow_run.completed", name="workflow_run", mode="comment-only")
    result = publish(cfg, report, "r.json", make_client(github))
    assert github.comments[2] == []
    assert result.code == 2 and result.status == "fail"
    assert any(line.startswith("::error") and "another commit" in line for line in result.lines)


def test_the_summary_stays_under_githubs_limit(config: Callable[..., Config]) -> None:
    report = sample_report(findings=5000)
    findings = report.bundles[0].findings
    findings[:] = [dataclasses.replace(f, message=f.message + " because" * 35) for f in findings]
    cfg = config(mode="verify-only")
    publish(cfg, report, "r.json", None)
    summary = cfg.step_summary.read_bytes()  # type: ignore[union-attr]
    assert 500_000 < len(summary) <= 1024 * 1024
    assert re.search(rb"Shortened to fit GitHub's 1 MiB job-summary limit: left out [0-9]+ errors", summary)


def test_verdict_counts_failed_bundles() -> None:
    report = sample_report()
    report.bundles.append(sample_report(failing=False).bundles[0])
    assert verdict(report, "error") == ("fail", 1)
    assert verdict(report, "warning") == ("fail", 2)
