"""action.yml, run step by step as the runner runs a composite action (tests/github/actionrunner.py),
against a loopback GitHub."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from actionrunner import ACTION, ROOT, Run, Runner
from fakegithub import APP, APP_BOT, TOKEN, FakeGitHub
from ghsupport import HEAD, make_bundle, sample_json

from checker.github.comment import marker
from checker.render.markdown import FOOTER_MARK
from checker.reports.files import read_report

SPEC_INPUTS = {"bundles", "comment", "github-token", "fail-on", "mode", "report", "args", "python-version"}
NEW_INPUTS = {"pr-number", "comment-key", "comment-mode", "hide-when-passing"}
# Beyond the contract: since the base; other onnxruntime releases; the verdict as a signed attestation.
ADDED_INPUTS = {"compare-to", "runtimes", "attest", "attest-key", "attestation"}
ZOO_INPUTS = {"reuse", "trusted-key", "shards", "changed-since", "costs"}  # the verdict store and the plan mode
SPEC_OUTPUTS = {"status", "report", "failed", "comment-url"}
ADDED_OUTPUTS = {"attestation", "matrix", "legs", "reused"}


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
    assert header[0].startswith("<!-- onnx-release-checker:sticky key=")
    assert header[1] == f"<!-- onnx-release-checker:run head={HEAD} run=101.1 -->"
    # Up to our line naming the run, then the footer, whose minute may differ; both link the commit and run.
    trailer = (
        "<sub>Verified by [run 101](https://github.com/octo-org/octo-repo/actions/runs/101) at commit "
        f"[`{HEAD[:12]}`](https://github.com/octo-org/octo-repo/commit/{HEAD}).</sub>"
    )
    assert trailer in visible
    assert visible.replace(trailer + "\n\n", "").split(FOOTER_MARK)[0] == local.stdout.split(FOOTER_MARK)[0]
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
    assert paths.code == 2 and "models/good;: no such path" in paths.stderr
    assert options.code == 2 and "unrecognized arguments: --strict;" in options.stderr
    for run in (paths, options):
        assert run.outputs["status"] == "fail"
        assert "ONNX release check: not verified" in run.summary
    assert [s.method for s in github.seen if s.method != "GET"] == []  # no comment yet: none is made


def test_verify_only_never_calls_the_api(runner: Runner, github: FakeGitHub) -> None:
    run = runner.run(bundles="models/bad", mode="verify-only", report="report.json")
    assert run.code == 1
    assert github.seen == []
    report = read_report(runner.workspace / "report.json")  # valid against the report schema
    # What a later comment-only run checks the pull request against:
    assert report["context"]["head_sha"] == HEAD and report["context"]["pull_request"] == 2
    assert report["context"]["bundle_set"] == "models/bad"


def test_action_yml_keeps_the_contract() -> None:
    assert set(ACTION["inputs"]) == SPEC_INPUTS | NEW_INPUTS | ADDED_INPUTS | ZOO_INPUTS
    assert set(ACTION["outputs"]) == SPEC_OUTPUTS | ADDED_OUTPUTS
    assert ACTION["runs"]["using"] == "composite"
    assert ACTION["branding"]["icon"] and ACTION["branding"]["color"]
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            assert re.fullmatch(r"actions/(setup-python|cache|cache/restore|cache/save)@[0-9a-f]{40}", step["uses"])
            assert step["with"].get("update-environment", False) is False
        else:
            assert "${{" not in step["run"], "an expression inside run: is a template injection"
    given = " ".join(str(v) for s in ACTION["runs"]["steps"] for v in s.get("env", {}).values())
    for name in (SPEC_INPUTS | NEW_INPUTS | ADDED_INPUTS) - {"python-version"}:
        assert f"${{{{ inputs.{name} }}}}" in given
    assert shutil.which("bash")


# ----- the behaviours of issue "The Action on real GitHub", each through the action's own steps

RUN_HEAD = "3484a3fb816e0859fd6e1cea078d76385ff50625"  # workflow_run.completed's head commit
WORKFLOW_RUN = "workflow_run.completed"


def test_an_app_token_keeps_one_comment_and_never_takes_over_anothers(runner: Runner, github: FakeGitHub) -> None:
    key = marker("Release check\ncheck\n__octo-org_onnx-release-checker")
    person = github.add_comment(2, key + "\n## a person quoting our marker", "octocat")
    other_app = github.add_comment(2, key + "\n## another app's copy", "other-app[bot]")
    runs = [runner.run(bundles="models/good", github_token=APP) for _ in range(2)]
    assert [r.code for r in runs] == [0, 0]
    mine = github.ours(2, APP_BOT)
    assert len(mine) == 1 and "1 bundle passed" in mine[0]["body"]
    assert person["body"].endswith("quoting our marker") and other_app["body"].endswith("another app's copy")
    assert "Comment on pull request #2: unchanged" in runs[1].stdout


def test_a_run_that_cannot_verify_turns_a_green_comment_neutral(runner: Runner, github: FakeGitHub) -> None:
    green = runner.run(bundles="models/good")
    assert green.code == 0 and "✅" in github.ours(2)[0]["body"]
    broken = runner.run(bundles="models/nothing-*")
    assert broken.code == 2
    assert broken.outputs["status"] == "fail" and broken.outputs["failed"] == "0"
    body = github.ours(2)[0]["body"]
    assert len(github.ours(2)) == 1
    assert "not verified" in body and "✅" not in body and "❌" not in body
    assert "not verified" in broken.summary and "models/nothing-&#42;: matches nothing" in body


def test_a_readme_beside_the_bundles_is_skipped_and_listed(runner: Runner, github: FakeGitHub) -> None:
    (runner.workspace / "models" / "README.md").write_text("# models\n", encoding="utf-8")
    (runner.workspace / "models" / "empty").mkdir()
    run = runner.run(bundles="models/*", fail_on="never")
    assert run.code == 0, run.stderr
    assert run.outputs["status"] == "fail" and run.outputs["failed"] == "1"  # bad-model fails; README is no bundle
    assert "Not bundles, so not verified (2)" in run.summary
    assert "models/README.md: not a bundle folder, manifest or archive" in run.summary
    assert "models/empty: a folder without a manifest" in run.summary
    report = read_report(runner.workspace / "checker-report.json")
    assert sorted(b["name"] for b in report["bundles"]) == ["bad-model", "good-model"]


def test_a_bundle_named_twice_is_verified_once_and_namesakes_are_told_apart(runner: Runner, github: FakeGitHub) -> None:
    make_bundle(runner.workspace / "other" / "good", name="good-model")
    run = runner.run(bundles="models/good models/good/bundle.yaml ./models/good/ other/good")
    assert run.code == 0, run.stderr
    report = read_report(runner.workspace / "checker-report.json")
    assert [b["path"] for b in report["bundles"]] == ["models/good", "other/good"]
    rows = [line for line in github.ours(2)[0]["body"].splitlines() if line.startswith("| ✅ | good-model")]
    assert len(rows) == 2 and "models/good" in rows[0] and "other/good" in rows[1]


def test_help_in_args_is_a_usage_error_not_a_green_step(runner: Runner) -> None:
    for args in ("-h", "--help", "--hel"):
        run = runner.run(bundles="models/good", args=args)
        assert run.code == 2, args
        assert run.outputs["status"] == "fail"
        assert "not verified" in run.summary


def test_comment_only_with_a_missing_or_invalid_report_still_writes_summary_and_outputs(
    runner: Runner, github: FakeGitHub, event_file: Any
) -> None:
    runner.extra_env = {
        "GITHUB_EVENT_NAME": "workflow_run",
        "GITHUB_EVENT_PATH": str(event_file("workflow_run.completed")),
    }
    (runner.workspace / "invalid.json").write_text('{"bundles": 3}', encoding="utf-8")
    for report in ("missing.json", "invalid.json"):
        run = runner.run(mode="comment-only", report=report)
        assert run.code == 2
        assert run.outputs["status"] == "fail" and run.outputs["failed"] == "0"
        assert "ONNX release check: not verified" in run.summary and report in run.summary
    assert [s.method for s in github.seen if s.method != "GET"] == []


def _comment_only(runner: Runner, event_file: Any, context: dict[str, Any] | None) -> Run:
    report = sample_json(failing=False)
    if context is not None:
        report["context"] = context
    (runner.workspace / "report.json").write_text(json.dumps(report), encoding="utf-8")
    runner.extra_env = {
        "GITHUB_EVENT_NAME": "workflow_run",
        "GITHUB_EVENT_PATH": str(event_file("workflow_run.completed")),
    }
    return runner.run(mode="comment-only", report="report.json")


def test_comment_only_refuses_a_report_without_context_or_about_another_pull_request(
    runner: Runner, github: FakeGitHub, event_file: Any
) -> None:
    github.pulls[2]["head"]["sha"] = RUN_HEAD
    github.add_pull(3, RUN_HEAD, branch="other")  # open, same head commit, not the run's: the report may not pick it
    refused = [
        _comment_only(runner, event_file, None),
        _comment_only(runner, event_file, {"head_sha": "0" * 40, "pull_request": 2}),
        _comment_only(runner, event_file, {"head_sha": RUN_HEAD, "pull_request": 3}),
    ]
    for run in refused:
        assert run.code in (0, 2)
        assert run.outputs["status"] in ("pass", "fail") and "status" in run.outputs
        assert run.summary
    assert github.comments[2] == [] and github.comments[3] == []
    assert "no context" in refused[0].stdout and "another commit" in refused[1].stdout
    assert "names pull request #3" in refused[2].stdout


def test_comment_only_footer_names_the_run_and_commit_from_the_event(
    runner: Runner, github: FakeGitHub, event_file: Any
) -> None:
    github.pulls[2]["head"]["sha"] = RUN_HEAD
    run = _comment_only(runner, event_file, {"head_sha": RUN_HEAD, "pull_request": 2, "run_id": "666"})
    assert run.code == 0, run.stdout + run.stderr
    body = github.ours(2)[0]["body"]
    base = "https://github.com/octo-org/octo-repo"
    assert f"Verified by [run 289782451]({base}/actions/runs/289782451) at commit" in body
    assert f"({base}/commit/{RUN_HEAD})" in body and f"posted by [run 101]({base}/actions/runs/101)" in body
    assert "666" not in body  # the report's own claim of a run is not what the footer shows


def test_a_secondary_rate_limit_is_not_called_a_missing_permission(runner: Runner, github: FakeGitHub) -> None:
    limited = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}
    github.fail("POST", r"/issues/2/comments$", 403, limited, {"retry-after": "0"}, times=10)
    run = runner.run(bundles="models/good")
    assert run.code == 0
    assert "rate limit was still exhausted" in run.summary and "lacks a permission" not in run.summary


def test_a_block_from_content_creation_is_a_rate_limit_not_a_lock(runner: Runner, github: FakeGitHub) -> None:
    """GitHub's word "blocked" holds "locked": the message is matched by its phrases, and names a rate limit."""
    blocked = {
        "message": "You have exceeded a secondary rate limit and have been temporarily blocked from content "
        "creation. Please retry your request again later.",
        "documentation_url": "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api",
    }
    github.fail("POST", r"/issues/2/comments$", 403, blocked, {"retry-after": "0"}, times=10)
    run = runner.run(bundles="models/good")
    assert run.code == 0
    assert "secondary rate limit was still exhausted" in run.summary and "run the job again later" in run.summary
    assert "conversation is locked" not in run.summary and "Unlock it" not in run.summary


def test_pull_request_target_warns_and_labels_the_commit_verified(
    runner: Runner, github: FakeGitHub, event_file: Any
) -> None:
    base = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
    (runner.workspace / ".git").mkdir()
    (runner.workspace / ".git" / "HEAD").write_text(base + "\n", encoding="utf-8")
    runner.extra_env = {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_SHA": base}
    run = runner.run(bundles="models/good")
    assert run.code == 0, run.stderr
    assert "::warning title=Not the pull request's files::pull_request_target checks out the base" in run.stdout
    body = github.ours(2)[0]["body"]
    assert f"commit [`{base[:12]}`]" in body and "verified commit f95f852bd8fc" in body
    assert f"[`{HEAD[:12]}`]" not in body


def test_comment_key_keeps_one_comment_when_bundles_are_edited(runner: Runner, github: FakeGitHub) -> None:
    runner.run(bundles="models/good")
    runner.run(bundles="models/good models/bad")
    assert len(github.ours(2)) == 1 and "1 of 2 bundles failed" in github.ours(2)[0]["body"]
    runner.run(bundles="models/good", comment_key="images")
    assert len(github.ours(2)) == 2


def test_comment_mode_recreate_and_minimize_old(runner: Runner, github: FakeGitHub) -> None:
    runner.run(bundles="models/good", comment_mode="recreate")
    first = github.ours(2)[0]["id"]
    runner.run(bundles="models/bad", comment_mode="recreate")
    assert [c["id"] for c in github.ours(2)] != [first] and len(github.ours(2)) == 1
    latest = github.ours(2)[0]
    runner.run(bundles="models/good", comment_mode="minimize-old")
    ours = github.ours(2)
    assert len(ours) == 2 and ours[-1]["id"] != latest["id"] and "passed" in ours[-1]["body"]
    assert github.minimized == {latest["node_id"]: "OUTDATED"}
    assert ours[0]["body"].startswith("<!-- onnx-release-checker:outdated key=")
    runner.run(bundles="models/bad", comment_mode="minimize-old")  # the outdated one is not ours any more
    assert len(github.ours(2)) == 3 and len(github.minimized) == 2


def test_hide_when_passing(runner: Runner, github: FakeGitHub) -> None:
    passing = runner.run(bundles="models/good", hide_when_passing="true")
    assert passing.code == 0 and github.ours(2) == []  # nothing to say: no comment made
    runner.run(bundles="models/bad", hide_when_passing="true")
    comment = github.ours(2)[0]
    assert github.minimized == {}
    runner.run(bundles="models/good", hide_when_passing="true")
    assert github.minimized == {comment["node_id"]: "RESOLVED"} and "passed" in github.ours(2)[0]["body"]
    runner.run(bundles="models/bad", hide_when_passing="true")
    assert github.minimized == {}


def test_pr_number_comments_from_workflow_dispatch(runner: Runner, github: FakeGitHub, tmp_path: Path) -> None:
    event = tmp_path / "dispatch.json"
    event.write_text(json.dumps({"ref": "refs/heads/feature", "inputs": {}}), encoding="utf-8")
    runner.extra_env = {"GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_EVENT_PATH": str(event), "GITHUB_SHA": HEAD}
    assert runner.run(bundles="models/good").code == 0
    assert github.ours(2) == []
    assert runner.run(bundles="models/good", pr_number="2").code == 0
    assert len(github.ours(2)) == 1
    assert runner.run(bundles="models/good", pr_number="two").code == 2


def test_a_hostile_workspace_runs_none_of_its_modules(runner: Runner, github: FakeGitHub, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    plant = f"open({str(ran)!r}, 'a').write(__name__ + '\\n')\n"
    for package in ("pip", "venv", "ensurepip", "checker", "requests", "numpy"):
        (runner.workspace / package).mkdir(exist_ok=True)
        for name in ("__init__.py", "__main__.py"):
            (runner.workspace / package / name).write_text(plant, encoding="utf-8")
    for module in ("sitecustomize", "usercustomize", "runpy", "encodings"):
        (runner.workspace / f"{module}.py").write_text(plant, encoding="utf-8")
    run = runner.run(bundles="models/good")
    assert run.code == 0, run.stderr
    assert not ran.exists(), ran.read_text(encoding="utf-8")
    assert len(github.ours(2)) == 1


def test_a_closed_pull_request_and_a_tag_push_get_no_comment(
    runner: Runner, github: FakeGitHub, event_file: Any
) -> None:
    closed = event_file("pull_request.synchronize", pull_request__state="closed")
    runner.extra_env = {"GITHUB_EVENT_PATH": str(closed)}
    assert runner.run(bundles="models/good").code == 0
    tag = event_file("push.tag")
    tagged = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
    github.add_pull(5, tagged)
    github.commit_pulls[tagged] = [5]  # an open pull request whose head is the tagged commit
    runner.extra_env = {"GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(tag), "GITHUB_SHA": tagged}
    run = runner.run(bundles="models/good")
    assert run.code == 0 and "No pull request to comment on for this push event." in run.stdout
    assert github.comments[2] == [] and github.comments[5] == []
    assert github.requests("POST") == []


def test_a_bad_input_value_still_writes_the_summary_and_outputs(runner: Runner, github: FakeGitHub) -> None:
    for inputs in ({"comment_mode": "sometimes"}, {"hide_when_passing": "maybe"}, {"mode": "comment-first"}):
        run = runner.run(bundles="models/good", **inputs)
        assert run.code == 2, inputs
        assert run.outputs["status"] == "fail" and run.outputs["failed"] == "0"
        assert "ONNX release check: not verified" in run.summary and "must be" in run.summary
    assert github.seen == []


def loosened_pull_request(runner: Runner) -> None:
    """models/m is the example bundle; base.json its report with the int8 score_drift max at 0.005 (failing)."""
    from bundlekit import EXAMPLE

    from checker.cli import main

    bundle = runner.workspace / "models" / "m"
    shutil.copytree(EXAMPLE, bundle)
    manifest = bundle / "bundle.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace("check: score_drift, max: 0.05,", "check: score_drift, max: 0.005,"), "utf-8")
    assert main(["lock", str(bundle)]) == 0
    base = runner.workspace / "base.json"
    assert main(["verify", str(bundle), "--format", "json", "--output", str(base)]) == 1
    for name in ("bundle.yaml", "bundle.sha256"):
        shutil.copy(EXAMPLE / name, bundle / name)


def visible(body: str) -> list[str]:
    return [line for line in re.sub(r"<!--.*?-->", "", body, flags=re.S).splitlines() if line.strip()]


def test_a_loosened_rule_is_the_first_thing_the_comment_says_and_fail_on_loosened_fails_it(
    runner: Runner, github: FakeGitHub
) -> None:
    loosened_pull_request(runner)
    said = "int8 logits score_drift max 0.005 → 0.05 (loosened)"
    run = runner.run(bundles="models/m", compare_to="base.json")
    assert run.code == 0, run.stderr  # off by default: said, not failed
    for body in (github.ours(2)[0]["body"], run.summary):
        top = visible(body)[:3]
        # The base's 0.005 fails the head's figure: the pass rests on the loosening and is not shown green.
        assert top[0].startswith("## ⚠️") and "only because a check was loosened" in top[0], top
        assert any(said in line for line in top), top
    run = runner.run(bundles="models/m", compare_to="base.json", fail_on="loosened")
    assert run.code == 1 and run.outputs["status"] == "fail" and run.outputs["failed"] == "1", run.stderr
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1 and "rules.loosened" in errors[0] and "line=103" in errors[0], errors
    top = visible(github.ours(2)[0]["body"])[:3]
    assert top[0].startswith("## ❌") and any(said in line for line in top), top
    for bad in ("never loosened", "loose", "error warning"):
        refused = runner.run(bundles="models/m", compare_to="base.json", fail_on=bad)
        assert refused.code == 2 and "fail-on must be one of" in refused.stderr
    alone = runner.run(bundles="models/m", fail_on="warning loosened")
    assert alone.code == 2 and "fail-on: loosened needs compare-to" in alone.stderr
