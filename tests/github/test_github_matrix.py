"""The matrix workflow's last job: `comment-only` with `report: reports/*.json` merges the shard reports and
posts one comment, against a loopback GitHub."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from bundlekit import EXAMPLE
from fakegithub import TOKEN, FakeGitHub

from checker.cli import main

RUN_HEAD = "3484a3fb816e0859fd6e1cea078d76385ff50625"


def _shard_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str], context: dict) -> Path:
    bundle = tmp_path / "mobilenet-tiny"
    shutil.copytree(EXAMPLE, bundle)
    folder = tmp_path / "reports"
    folder.mkdir()
    for k in (1, 2):
        out = folder / f"shard-{k}.json"
        assert main(["verify", str(bundle), "--shard", f"{k}/2", "--format", "json", "-o", str(out)]) == 0
        report = json.loads(out.read_text())
        report["context"] = context
        out.write_text(json.dumps(report))
    capsys.readouterr()
    return folder


def test_comment_only_merges_the_matrix_reports_into_one_comment(
    monkeypatch: pytest.MonkeyPatch,
    github: FakeGitHub,
    tmp_path: Path,
    event_file: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = _shard_reports(tmp_path, capsys, {"head_sha": RUN_HEAD, "pull_request": 2})
    github.add_pull(2, RUN_HEAD)
    for name in ("GITHUB_RUN_ID", "GITHUB_ACTIONS", "INPUT_GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_EVENT_NAME", "workflow_run")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event_file("workflow_run.completed")))
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/octo-repo")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("INPUT_MODE", "comment-only")
    monkeypatch.setenv("INPUT_REPORT", str(folder / "*.json"))
    assert main(["github", "run"]) == 0
    assert len(github.comments[2]) == 1
    body = github.comments[2][0]["body"]
    # The merged set's worst case of each rule, from shard 1 or 2, is the unsharded run's: which case that is
    # depends on the CPU's int8 kernels, so it is read from a whole run on this machine.
    assert (
        main(["verify", str(tmp_path / "mobilenet-tiny"), "--format", "json", "-o", str(tmp_path / "whole.json")]) == 0
    )
    whole = json.loads((tmp_path / "whole.json").read_text())["bundles"][0]
    # A rule whose cases all measured the same has no worst case: the table says "all alike".
    worst = {r["worst_case"] for c in whole["comparisons"] for r in c["rules"] if len(set(r["cases"].values())) > 1}
    assert "mobilenet-tiny" in body and all(f"| {name} |" in body for name in worst), (worst, body)
    assert summary.read_text().count("### ✅ mobilenet-tiny") == 1  # one bundle, not one per shard


def test_reports_about_different_commits_are_not_merged(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from checker.github.reportfile import ReportError, read_reports

    folder = _shard_reports(tmp_path, capsys, {"head_sha": RUN_HEAD, "pull_request": 2})
    other = json.loads((folder / "shard-2.json").read_text())
    other["context"] = {"head_sha": "0" * 40, "pull_request": 2}
    (folder / "shard-2.json").write_text(json.dumps(other))
    with pytest.raises(ReportError, match="different pull requests or commits"):
        read_reports(str(folder / "*.json"))
    with pytest.raises(ReportError, match="no report matches"):
        read_reports(str(tmp_path / "none" / "*.json"))


def test_the_runtimes_input_becomes_runtime_options(tmp_path: Path) -> None:
    from checker.github.config import Config
    from checker.github.run import verify_options

    config = Config.from_env(
        {"INPUT_RUNTIMES": "oldest\n onnxruntime-openvino==1.24.1 ", "INPUT_BUNDLES": str(EXAMPLE)}
    )
    assert verify_options(config).runtimes == ["oldest", "onnxruntime-openvino==1.24.1"]
    config = Config.from_env({"INPUT_RUNTIMES": "newest", "INPUT_ARGS": "--runtime 1.17.3"})
    assert verify_options(config).runtimes == ["1.17.3", "newest"]


def test_the_reuse_input_refuses_what_reuse_refuses_on_the_command_line(tmp_path: Path) -> None:
    """The action's `reuse` input is checked with the options `args` and `runtimes` give, as `--reuse` is."""
    from checker.errors import UsageError
    from checker.github.config import Config
    from checker.github.run import verify_options

    public = tmp_path / "attest.pub"
    public.write_text("not read before the options are checked\n")
    base = {"INPUT_BUNDLES": str(EXAMPLE), "INPUT_REUSE": str(tmp_path / "store"), "INPUT_TRUSTED_KEY": str(public)}
    for extra, words in (
        ({"INPUT_ARGS": "--run-validation"}, "--run-validation"),
        ({"INPUT_ARGS": "--shard 1/2"}, "--shard"),
        ({"INPUT_ARGS": f"--device-outputs {tmp_path}"}, "--device-outputs"),
        ({"INPUT_RUNTIMES": "newest"}, "name its version"),
    ):
        with pytest.raises(UsageError, match=words):
            verify_options(Config.from_env({**base, **extra}))
