"""action.yml, run step by step as the runner runs a composite action, against a loopback GitHub.

The runner's part is played here: each `run:` step gets the environment the runner sets (the
step's `env:` with its expressions evaluated, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files of its
own), runs under `bash --noprofile --norc -eo pipefail`, and its outputs become the action's. The
setup-python and install steps are replaced by the Python running these tests.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fakegithub import TOKEN, FakeGitHub
from ghsupport import HEAD, make_bundle
from ruamel.yaml import YAML

from checker.github.reportfile import read_report
from checker.render.markdown import FOOTER_MARK

ROOT = Path(__file__).resolve().parents[2]
ACTION: dict[str, Any] = YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
SPEC_INPUTS = {"bundles", "comment", "github-token", "fail-on", "mode", "report", "args", "python-version"}
ADDED_INPUTS = {"compare-to", "runtimes"}  # beyond the contract: since the base; other onnxruntime releases
SPEC_OUTPUTS = {"status", "report", "failed", "comment-url"}


@dataclass
class Run:
    code: int
    outputs: dict[str, str]
    stdout: str = ""
    stderr: str = ""
    summary: str = ""
    files: list[str] = field(default_factory=list)  # everything the steps wrote, for the token check


def read_outputs(text: str) -> dict[str, str]:
    values, lines, i = {}, text.split("\n"), 0
    while i < len(lines) - 1:
        name, _, delimiter = lines[i].partition("<<")
        end = lines.index(delimiter, i + 1)
        values[name] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return values


class Runner:
    """Plays GitHub's runner for the composite action in action.yml."""

    def __init__(self, tmp: Path, github: FakeGitHub, event: Path) -> None:
        self.workspace = tmp / "workspace"
        self.temp = tmp / "runner-temp"
        self.workspace.mkdir()
        self.temp.mkdir()
        self.github, self.event = github, event
        self.runs = 0
        checker = self.temp / "onnx-release-checker" / "bin" / "checker"
        checker.parent.mkdir(parents=True)
        checker.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m checker "$@"\n', encoding="utf-8")
        checker.chmod(checker.stat().st_mode | stat.S_IEXEC)

    def environment(self, run_id: int) -> dict[str, str]:
        return {
            "PATH": os.environ["PATH"],
            "HOME": str(self.temp),
            "PYTHONPATH": str(ROOT),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_API_URL": self.github.url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": "octo-org/octo-repo",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_SHA": "f" * 40,  # the merge commit a pull_request run checks out
            "GITHUB_RUN_ID": str(run_id),
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.temp),
            "RUNNER_OS": "Linux",
        }

    def run(self, **inputs: str) -> Run:
        self.runs += 1
        values = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
        values.update({k.replace("_", "-"): v for k, v in inputs.items()})
        context = {"inputs": {k: self.evaluate(v, {}) for k, v in values.items()}, "steps": {}}
        result = Run(0, {})
        for step in ACTION["runs"]["steps"]:
            if not self.play(step, context, result):
                break
        result.outputs = {k: self.evaluate(v["value"], context) for k, v in ACTION["outputs"].items()}
        return result

    def play(self, step: dict[str, Any], context: dict[str, Any], result: Run) -> bool:
        if "uses" in step:  # actions/setup-python: this Python stands in
            context["steps"][step["id"]] = {"outputs": {"python-path": sys.executable}}
            return True
        if step.get("id") == "install":  # stands in: the wrapper made in __init__
            return True
        n = self.runs * 10 + len(context["steps"])
        files = {"GITHUB_OUTPUT": self.temp / f"output-{n}", "GITHUB_STEP_SUMMARY": self.temp / f"summary-{n}"}
        for path in files.values():
            path.write_text("", encoding="utf-8")
        env = {**self.environment(100 + self.runs), **{k: str(p) for k, p in files.items()}}
        env.update({k: self.evaluate(str(v), context) for k, v in step.get("env", {}).items()})
        script = self.temp / f"step-{n}.sh"
        script.write_text(step["run"], encoding="utf-8")
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        context["steps"][step["id"]] = {"outputs": read_outputs(files["GITHUB_OUTPUT"].read_text(encoding="utf-8"))}
        result.code, result.stdout, result.stderr = done.returncode, result.stdout + done.stdout, done.stderr
        result.summary += files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8")
        result.files += [p.read_text(encoding="utf-8") for p in files.values()]
        return done.returncode == 0

    def evaluate(self, text: str, context: dict[str, Any]) -> str:
        """The expressions action.yml uses; any other fails the test, to be added here knowingly."""

        def value(match: re.Match[str]) -> str:
            expression = match.group(1)
            if expression == "github.token":
                return TOKEN
            head, _, rest = expression.partition(".")
            node: Any = context.get(head)
            for key in rest.split("."):
                if not isinstance(node, dict):
                    raise AssertionError(f"unsupported expression {expression!r}")
                node = node.get(key, "")
            if not isinstance(node, str):
                raise AssertionError(f"unsupported expression {expression!r}")
            return node

        return EXPRESSION.sub(value, text)


@pytest.fixture
def runner(tmp_path: Path, github: FakeGitHub, event_file: Any) -> Runner:
    github.add_pull(2, HEAD)
    runner = Runner(tmp_path, github, event_file("pull_request.synchronize"))
    make_bundle(runner.workspace / "models" / "good", name="good-model")
    make_bundle(runner.workspace / "models" / "bad", name="bad-model", complete=False)
    return runner


def assert_no_token(run: Run) -> None:
    for text in (run.stdout, run.stderr, run.summary, *run.files, *run.outputs.values()):
        assert TOKEN not in text


def test_a_passing_bundle_twice_makes_one_comment_and_passes(runner: Runner, github: FakeGitHub) -> None:
    first = runner.run(bundles="models/good")
    second = runner.run(bundles="models/good")
    for run in (first, second):
        assert run.code == 0, run.stderr
        assert run.outputs["status"] == "pass" and run.outputs["failed"] == "0"
        assert run.outputs["report"] == "checker-report.json"
        assert run.outputs["comment-url"] == github.ours(2)[0]["html_url"]
        assert run.summary.startswith("## ✅ ONNX release check: 1 bundle passed")
        assert_no_token(run)
    assert len(github.ours(2)) == 1
    assert len(github.requests("POST")) == 1
    assert github.requests("PATCH") == []  # the second run's result is the same: nothing re-sent
    assert "Comment on pull request #2: unchanged" in second.stdout
    assert (runner.workspace / "checker-report.json").is_file()


def test_a_failing_bundle_twice_annotates_comments_once_and_fails(runner: Runner, github: FakeGitHub) -> None:
    runs = [runner.run(bundles="models/good\nmodels/bad"), runner.run(bundles="models/good\nmodels/bad")]
    for run in runs:
        assert run.code == 1, run.stderr
        assert run.outputs["status"] == "fail" and run.outputs["failed"] == "1"
        errors = [line for line in run.stdout.splitlines() if line.startswith("::error ")]
        assert errors == [
            "::error file=models/bad/bundle.yaml,title=bundle.missing_piece (bad-model)::missing piece "
            "'validation_command': validation.command (how the device validates the bundle) is not given"
        ]
        assert_no_token(run)
    assert len(github.ours(2)) == 1
    body = github.ours(2)[0]["body"]
    assert "1 of 2 bundles failed" in body
    # The verdict text is fenced off from workflow commands while the checker prints it.
    fence = re.search(r"^::stop-commands::([0-9a-f]{32})$", runs[0].stdout, re.M)
    assert fence and f"\n::{fence.group(1)}::\n" in runs[0].stdout


def test_the_comment_is_what_checker_verify_prints_locally(runner: Runner, github: FakeGitHub) -> None:
    run = runner.run(bundles="models/bad")
    assert run.code == 1
    # Locally, the same GitHub variables (with the pull request's head as GITHUB_SHA) give the same links.
    github_env = {**runner.environment(101), "GITHUB_SHA": HEAD}
    local = subprocess.run(
        [sys.executable, "-m", "checker", "verify", "models/bad", "--format", "markdown"],
        cwd=runner.workspace,
        capture_output=True,
        text=True,
        env={**os.environ, **github_env, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert local.returncode == 1
    body = github.ours(2)[0]["body"]
    header, visible = body.split("\n", 2)[:2], body.split("\n", 2)[2]
    assert header[0].startswith("<!-- onnx-release-checker:sticky set=")
    assert header[1] == f"<!-- onnx-release-checker:run head={HEAD} run=101.1 -->"
    # Up to the footer, whose minute may differ; the footer links the same commit and run.
    assert visible.split(FOOTER_MARK)[0] == local.stdout.split(FOOTER_MARK)[0]
    blob = f"](https://github.com/octo-org/octo-repo/blob/{HEAD}/models/bad/bundle.yaml)"
    assert blob in visible
    footer = visible.split(FOOTER_MARK)[1]
    assert f"[`{HEAD[:7]}`](https://github.com/octo-org/octo-repo/commit/{HEAD})" in footer
    assert "[run 101](https://github.com/octo-org/octo-repo/actions/runs/101)" in footer


def test_fail_on_never_reports_without_failing(runner: Runner) -> None:
    run = runner.run(bundles="models/bad", fail_on="never", comment="never")
    assert run.code == 0
    assert run.outputs["status"] == "fail"
    assert run.outputs["comment-url"] == ""


def test_inputs_are_never_executed(runner: Runner, tmp_path: Path, github: FakeGitHub) -> None:
    marks = [tmp_path / f"executed-{i}" for i in range(5)]
    paths = runner.run(bundles=f"models/good; touch {marks[0]}\n$(touch {marks[1]}) `touch {marks[2]}`")
    options = runner.run(bundles="models/good", args=f"--strict; touch {marks[3]}", report=f"r.json$(touch {marks[4]})")
    assert not any(mark.exists() for mark in marks)
    assert paths.code == 2 and "no such path: models/good;" in paths.stderr
    assert options.code == 2 and "unrecognized arguments: --strict;" in options.stderr
    for run in (paths, options):
        assert run.outputs["status"] == "fail"
        assert "not run (a usage error" in run.summary
    assert github.seen == []


def test_verify_only_never_calls_the_api(runner: Runner, github: FakeGitHub) -> None:
    run = runner.run(bundles="models/bad", mode="verify-only", report="report.json")
    assert run.code == 1
    assert github.seen == []
    report = read_report(runner.workspace / "report.json")  # valid against the report schema
    # What a later comment-only run checks the pull request against:
    assert report["context"]["head_sha"] == HEAD and report["context"]["pull_request"] == 2
    assert report["context"]["bundle_set"] == "models/bad"


def test_action_yml_keeps_the_contract() -> None:
    assert set(ACTION["inputs"]) == SPEC_INPUTS | ADDED_INPUTS
    assert set(ACTION["outputs"]) == SPEC_OUTPUTS
    assert ACTION["runs"]["using"] == "composite"
    assert ACTION["branding"]["icon"] and ACTION["branding"]["color"]
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            assert re.fullmatch(r"actions/(setup-python|cache)@[0-9a-f]{40}", step["uses"])
            if "setup-python" in step["uses"]:
                assert step["with"]["update-environment"] is False
        else:
            assert "${{" not in step["run"], "an expression inside run: is a template injection"
    given = " ".join(str(v) for s in ACTION["runs"]["steps"] for v in s.get("env", {}).values())
    for name in SPEC_INPUTS - {"python-version"} | {"runtimes"}:
        assert f"${{{{ inputs.{name} }}}}" in given
    assert shutil.which("bash")
