"""compare-to: base — the bundles verified at the pull request's base commit, in a worktree of their own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checker.errors import Error, UsageError
from checker.github.base import base_report, existing
from checker.github.config import Config
from checker.github.event import Event
from checker.release.lock import lock
from checker.reports.diff import diff
from checker.reports.model import Report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mobilenet-tiny"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose base commit has models/m; the head changes its runtime target and adds models/new."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "ci@example.com")
    git(root, "config", "user.name", "CI")
    shutil.copytree(EXAMPLE, root / "models" / "m")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    base = git(root, "rev-parse", "HEAD")
    manifest = root / "models" / "m" / "bundle.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("Raspberry Pi 5", "Raspberry Pi 4"), encoding="utf-8"
    )
    assert lock(manifest).ok  # the manifest is part of the release's identity: a changed target is a new digest
    shutil.copytree(EXAMPLE, root / "models" / "new")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "head")
    return root, base


def event(base: str) -> Event:
    return Event("pull_request", {"pull_request": {"number": 2, "base": {"sha": base}, "head": {"sha": "f" * 40}}})


def test_base_verifies_the_bundles_at_the_base_commit_and_calls_a_missing_one_new(repo: tuple[Path, str]) -> None:
    root, base = repo
    config = Config(workspace=root, compare_to="base")
    found = base_report(config, event(base), ["models/*"], ["--run-validation", "--case-timeout", "60"])
    assert [b.path for b in found.bundles] == ["models/m"]  # models/new is not there at the base
    assert found.bundles[0].findings  # verified for real (the validation command was not run)
    assert all(f.id != "validation.failed" for f in found.bundles[0].findings)
    assert git(root, "worktree", "list").count("\n") == 0  # the worktree is gone again
    assert git(root, "status", "--porcelain") == ""  # and the workspace untouched

    head = subprocess.run(
        [sys.executable, "-m", "checker", "verify", "models/m", "models/new", "--format", "json"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    changes = diff(found, Report.from_dict(json.loads(head.stdout))).to_dict()
    states = {e["path"]: e["state"] for e in changes["bundles"]}
    assert states == {"models/m": "changed", "models/new": "new"}
    entry = next(e for e in changes["bundles"] if e["path"] == "models/m")
    assert entry["pieces"] == ["runtime"]


def test_base_needs_a_pull_request_event(repo: tuple[Path, str]) -> None:
    root, _ = repo
    with pytest.raises(UsageError, match="needs a pull_request event"):
        base_report(Config(workspace=root, compare_to="base"), Event("push", {}), ["models/m"], [])


def test_an_unknown_base_commit_is_a_clear_error(repo: tuple[Path, str]) -> None:
    root, _ = repo
    with pytest.raises(Error, match="compare-to: base: git fetch failed"):
        base_report(Config(workspace=root, compare_to="base"), event("0" * 40), ["models/m"], [])


def test_a_path_to_a_report_is_read_and_checked(tmp_path: Path) -> None:
    report = tmp_path / "base.json"
    report.write_text(json.dumps({"checker_version": "0", "status": "pass", "bundles": []}), encoding="utf-8")
    assert base_report(Config(compare_to=str(report)), Event("", {}), [], []).bundles == []
    report.write_text('{"status": 3}', encoding="utf-8")
    with pytest.raises(Error, match="does not match the report schema"):
        base_report(Config(compare_to=str(report)), Event("", {}), [], [])


def test_only_paths_inside_the_worktree_are_used(tmp_path: Path) -> None:
    (tmp_path / "models" / "a").mkdir(parents=True)
    (tmp_path / "models" / "b").mkdir()
    assert existing(tmp_path, ["models/*", "/etc", "../x", "models/a", "models/missing"]) == ["models/a", "models/b"]


def test_the_action_step_summary_says_what_changed_since_the_base(repo: tuple[Path, str], tmp_path: Path) -> None:
    root, base = repo
    event_file, summary, output = tmp_path / "event.json", tmp_path / "summary.md", tmp_path / "output"
    event_file.write_text(json.dumps(event(base).payload), encoding="utf-8")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))},
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event_file),
        "GITHUB_WORKSPACE": str(root),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "INPUT_MODE": "verify-only",
        "INPUT_BUNDLES": "models/*",
        "INPUT_COMPARE_TO": "base",
        "INPUT_REPORT": str(tmp_path / "report.json"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "checker", "github", "run"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    md = summary.read_text(encoding="utf-8")
    assert "**Since the base:**" in md and "1 bundle new" in md
    assert "changed: runtime" in md
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert {e["path"]: e["state"] for e in report["changes"]["bundles"]} == {"models/m": "changed", "models/new": "new"}
