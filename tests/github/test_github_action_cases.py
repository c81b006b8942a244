"""The action's steps on cases real GitHub produces: matrix legs, comments edited, locked or deleted, events
that name no commit or a review, internal CAs, a release gate beside a shared cache, odd bundle names, and a
crash's traceback in the log. Each runs action.yml step by step (tests/github/actionrunner.py) against the
loopback GitHub."""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from actionrunner import Cache, Run, Runner
from fakegithub import BOT, PAT, FakeGitHub
from ghsupport import HEAD, make_bundle
from pytest_httpserver import HTTPServer
from ruamel.yaml import YAML
from test_github_workflows import doc_workflows

from checker.reports.files import read_report

HEADLINE = re.compile(r"^## .*$", re.M)
LOCKED = {
    "message": "Unable to create comment because issue is locked.",
    "documentation_url": "https://docs.github.com/articles/locking-conversations/",
}
SSO = {
    "message": "Resource protected by organization SAML enforcement. You must grant your Personal Access token "
    "access to this organization.",
    "documentation_url": "https://docs.github.com/articles/authenticating-to-a-github-organization-with-saml-single-sign-on/",
}
SSO_HEADER = {"X-GitHub-SSO": "required; url=https://github.com/orgs/octo-org/sso?authorization_request=AZ09"}


def headline(markdown: str) -> str:
    found = HEADLINE.search(markdown)
    assert found, markdown[:300]
    return found.group(0)


def no_permission_advice(run: Run) -> None:
    assert "lacks a permission" not in run.summary and "lacks a permission" not in run.stdout


# ----- matrix legs and the docs' matrix with one comment


def _docs_matrix() -> dict[str, Any]:
    for text in doc_workflows():
        workflow = YAML(typ="safe").load(text)
        steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
        if any(s.get("with", {}).get("report") == "reports/*.json" for s in steps):
            return dict(workflow)
    raise AssertionError("docs/action.md has no matrix whose reports one comment-only job posts")


def _with(step: dict[str, Any], values: dict[str, str]) -> dict[str, str]:
    """A step's `with:`, its expressions (matrix, strategy) filled in as GitHub would."""

    def fill(text: str) -> str:
        return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: values[m.group(1)], text)

    return {k: fill(str(v)) for k, v in step["with"].items()}


def _action_step(job: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in job["steps"] if s.get("uses") == "OWNER/REPO@v1")


def test_the_docs_shard_matrix_posts_one_comment_from_the_same_pull_request_run(
    tmp_path: Path, github: FakeGitHub, event_file: Callable[..., Path]
) -> None:
    workflow = _docs_matrix()
    assert workflow["on"] == ["pull_request"]
    verify, comment = workflow["jobs"]["verify"], workflow["jobs"]["comment"]
    assert comment["needs"] == "verify"
    github.add_pull(2, HEAD)
    event = event_file("pull_request.synchronize")
    run_env = {"GITHUB_RUN_ID": "5550", "GITHUB_WORKFLOW": workflow["name"]}
    shards = verify["strategy"]["matrix"]["shard"]
    runtime = verify["strategy"]["matrix"]["runtime"][0]
    reports = tmp_path / "artifacts"
    reports.mkdir()
    for index, shard in enumerate(shards):  # one runtime's legs: installing onnxruntime releases needs the index
        leg = Runner(tmp_path / f"leg-{index}", github, event)
        make_bundle(leg.workspace / "models" / "classifier", name="classifier")
        leg.extra_env = {**run_env, "GITHUB_JOB": "verify"}
        leg.strategy = {"job-index": str(index), "job-total": str(len(shards))}
        values = {"matrix.shard": shard, "matrix.runtime": runtime, "strategy.job-index": str(index)}
        given = _with(_action_step(verify), values)
        assert given.pop("runtimes") == runtime
        done = leg.run(**given)
        assert done.code == 0, done.stderr
        shutil.copy(leg.workspace / given["report"], reports)
    assert github.seen == []  # verify-only legs never call the API
    last = Runner(tmp_path / "comment", github, event)
    (last.workspace / "reports").mkdir()
    for report in reports.iterdir():  # download-artifact with merge-multiple: every leg's file in one folder
        shutil.copy(report, last.workspace / "reports")
    last.extra_env = {**run_env, "GITHUB_JOB": "comment"}
    done = last.run(**_with(_action_step(comment), {}))
    assert done.code == 0, done.stdout + done.stderr
    assert len(github.ours(2)) == 1
    body = github.ours(2)[0]["body"]
    assert headline(body) == "## ✅ ONNX release check: 1 bundle passed"
    assert "[run 5550](https://github.com/octo-org/octo-repo/actions/runs/5550)" in body and "posted by" not in body


def test_comment_only_under_pull_request_refuses_another_runs_report(runner: Runner, github: FakeGitHub) -> None:
    runner.extra_env = {"GITHUB_RUN_ID": "7001"}
    assert runner.run(bundles="models/good", mode="verify-only", report="leg.json").code == 0
    runner.extra_env = {"GITHUB_RUN_ID": "7002"}  # a later run of the same pull request: not the legs' run
    refused = runner.run(mode="comment-only", report="leg.json")
    assert refused.code == 2 and "made by another run" in refused.summary
    assert github.ours(2) == []
    runner.extra_env = {"GITHUB_RUN_ID": "7001"}
    accepted = runner.run(mode="comment-only", report="leg.json")
    assert accepted.code == 0, accepted.stdout
    assert len(github.ours(2)) == 1


def test_comment_only_in_a_merge_queue_run_accepts_that_runs_reports(
    runner: Runner, github: FakeGitHub, tmp_path: Path
) -> None:
    queued = "b" * 40
    event = tmp_path / "merge_group.json"
    group = {"head_sha": queued, "head_ref": "refs/heads/gh-readonly-queue/main/pr-2-" + HEAD, "base_sha": "c" * 40}
    event.write_text(json.dumps({"action": "checks_requested", "merge_group": group}), encoding="utf-8")
    runner.extra_env = {"GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": str(event), "GITHUB_RUN_ID": "8001"}
    assert runner.run(bundles="models/good", mode="verify-only", report="leg.json").code == 0
    assert read_report(runner.workspace / "leg.json")["context"]["head_sha"] == queued
    accepted = runner.run(mode="comment-only", report="leg.json")
    assert accepted.code == 0 and "No pull request to comment on for this merge_group event." in accepted.stdout
    assert headline(accepted.summary) == "## ✅ ONNX release check: 1 bundle passed"
    runner.extra_env["GITHUB_RUN_ID"] = "8002"
    refused = runner.run(mode="comment-only", report="leg.json")
    assert refused.code == 2 and "made by another run" in refused.summary


def test_matrix_legs_keep_a_comment_each_unless_a_comment_key_names_one(runner: Runner, github: FakeGitHub) -> None:
    for index, bundles in enumerate(("models/bad", "models/good")):
        runner.strategy = {"job-index": str(index), "job-total": "2"}
        runner.run(bundles=bundles)
    legs = [headline(c["body"]) for c in github.ours(2)]
    assert legs == ["## ❌ ONNX release check: 1 of 1 bundle failed", "## ✅ ONNX release check: 1 bundle passed"]
    for index, bundles in enumerate(("models/bad", "models/good")):
        runner.strategy = {"job-index": str(index), "job-total": "2"}
        runner.run(bundles=bundles, comment_key="release")
    assert len(github.ours(2)) == 3  # the documented comment-key still wins: both legs keep one comment
    assert headline(github.ours(2)[2]["body"]) == "## ✅ ONNX release check: 1 bundle passed"


# ----- comments edited, locked, deleted; tokens without SSO


def test_a_comment_saved_from_the_web_editor_with_crlf_is_still_ours(runner: Runner, github: FakeGitHub) -> None:
    assert runner.run(bundles="models/good").code == 0
    comment = github.ours(2)[0]
    comment["body"] = comment["body"].replace("\n", "\r\n")  # what GitHub stores for a body edited in the browser
    failing = runner.run(bundles="models/bad")
    assert failing.code == 1
    assert len(github.ours(2)) == 1 and "failed" in headline(github.ours(2)[0]["body"])
    comment["body"] = comment["body"].replace("\n", "\r\n")
    again = runner.run(bundles="models/bad")
    assert "Comment on pull request #2: unchanged" in again.stdout and github.requests("PATCH")[1:] == []


def test_a_locked_conversation_is_called_locked(runner: Runner, github: FakeGitHub) -> None:
    github.fail("POST", r"/issues/2/comments$", 403, LOCKED, times=5)
    run = runner.run(bundles="models/good")
    assert run.code == 0
    assert "conversation is locked" in run.summary and "Unlock it" in run.summary
    no_permission_advice(run)


def test_a_comment_deleted_before_its_edit_is_written_anew(runner: Runner, github: FakeGitHub) -> None:
    assert runner.run(bundles="models/good", github_token=PAT).code == 0
    github.before("PATCH", r"/issues/comments/\d+$", lambda: github.comments[2].clear())  # a person deletes it
    run = runner.run(bundles="models/bad", github_token=PAT)
    assert run.code == 1
    mine = github.ours(2, "release-bot")
    assert len(mine) == 1 and "failed" in headline(mine[0]["body"])
    assert run.outputs["comment-url"] == mine[0]["html_url"]
    assert "Pull-request comment not written" not in run.stdout
    no_permission_advice(run)


def test_a_token_without_saml_sso_authorization_is_told_to_authorize_it(runner: Runner, github: FakeGitHub) -> None:
    github.fail("*", r"^/repos/", 403, SSO, SSO_HEADER, times=50)
    run = runner.run(bundles="models/good", github_token=PAT)
    assert run.code == 0
    assert "SAML single sign-on" in run.summary and "again after each rotation" in run.summary
    assert "Grant the job" not in run.summary
    no_permission_advice(run)


# ----- which commit and which pull request


def test_pull_request_target_on_the_base_branch_never_gets_a_green_headline(runner: Runner, github: FakeGitHub) -> None:
    base = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
    (runner.workspace / ".git").mkdir()
    (runner.workspace / ".git" / "HEAD").write_text(base + "\n", encoding="utf-8")
    runner.extra_env = {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_SHA": base, "GITHUB_REF": "refs/heads/main"}
    run = runner.run(bundles="models/good")
    assert run.code == 0, run.stderr
    expected = "## ⚠️ ONNX release check: the base branch was checked, not this pull request's files"
    for markdown in (github.ours(2)[0]["body"], run.summary):
        assert headline(markdown) == expected
        assert "On the base branch's files: ONNX release check: 1 bundle passed" not in markdown
        assert "On the base branch's files: 1 bundle passed" in markdown


def test_workflow_dispatch_with_pr_number_checks_the_checked_out_head(
    runner: Runner, github: FakeGitHub, tmp_path: Path
) -> None:
    event = tmp_path / "dispatch.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "inputs": {"pr": "2"}}), encoding="utf-8")
    git = runner.workspace / ".git"
    git.mkdir()
    (git / "HEAD").write_text(HEAD + "\n", encoding="utf-8")  # actions/checkout with ref: the PR's head commit
    runner.extra_env = {
        "GITHUB_EVENT_NAME": "workflow_dispatch",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SHA": "a" * 40,  # main's tip, which dispatched the run
        "GITHUB_REF": "refs/heads/main",
    }
    run = runner.run(bundles="models/good", pr_number="2")
    assert run.code == 0 and "Comment on pull request #2: created" in run.stdout, run.stdout
    assert f"/commit/{HEAD})" in github.ours(2)[0]["body"] and "a" * 40 not in github.ours(2)[0]["body"]
    # A branch checked out by name: HEAD names it, and the commit is in packed-refs.
    (git / "HEAD").write_text("ref: refs/heads/feature\n", encoding="utf-8")
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{HEAD} refs/heads/feature\n", encoding="utf-8")
    again = runner.run(bundles="models/bad", pr_number="2")
    assert "Comment on pull request #2: updated" in again.stdout, again.stdout


@pytest.mark.parametrize("name", ["pull_request_review", "pull_request_review_comment"])
def test_a_review_event_comments_on_its_pull_request(
    runner: Runner, github: FakeGitHub, event_file: Callable[..., Path], name: str
) -> None:
    event = event_file("pull_request.synchronize", action="submitted" if name.endswith("review") else "created")
    runner.extra_env = {"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(event)}
    run = runner.run(bundles="models/good")
    assert run.code == 0 and "Comment on pull request #2: created" in run.stdout, run.stdout
    assert f"/commit/{HEAD})" in github.ours(2)[0]["body"]


def test_a_bundle_folder_with_brackets_in_its_name_is_that_folder(runner: Runner, github: FakeGitHub) -> None:
    make_bundle(runner.workspace / "models" / "classifier [int8]", name="classifier-int8")
    run = runner.run(bundles='"models/classifier [int8]"')
    assert run.code == 0, run.stderr
    report = read_report(runner.workspace / "checker-report.json")
    assert [b["path"] for b in report["bundles"]] == ["models/classifier [int8]"]
    globbed = runner.run(bundles="models/classifier*")  # a pattern is still a pattern
    assert globbed.code == 0, globbed.stderr


# ----- HTTPS through an internal CA


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def internal_ca(tmp_path: Path) -> tuple[Path, ssl.SSLContext]:
    """A CA of the company's own (not in certifi's bundle), and a server certificate for 127.0.0.1 it signed."""
    folder = tmp_path / "pki"
    folder.mkdir()
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=Octo Internal Root CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=ghes",
        cwd=folder,
    )  # fmt: skip
    (folder / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n",
        encoding="utf-8",
    )
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=folder,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "server.pem", folder / "server.key")
    return folder / "ca.pem", context


@pytest.fixture
def ghes_tls(internal_ca: tuple[Path, ssl.SSLContext]) -> Iterator[FakeGitHub]:
    """GitHub Enterprise Server over HTTPS, its certificate signed by the internal CA."""
    server = HTTPServer(host="127.0.0.1", ssl_context=internal_ca[1], threaded=True)
    server.start()
    fake = FakeGitHub(server, "ghes-3.19", "/api/v3")
    yield fake
    server.stop()
    assert fake.violations == [], "\n".join(fake.violations)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command makes the CA")
def test_enterprise_server_behind_an_internal_ca_installed_on_the_runner(
    tmp_path: Path, ghes_tls: FakeGitHub, event_file: Callable[..., Path], internal_ca: tuple[Path, ssl.SSLContext]
) -> None:
    assert ghes_tls.url.startswith("https://127.0.0.1:")
    ghes_tls.add_pull(2, HEAD)
    runner = Runner(tmp_path / "job", ghes_tls, event_file("pull_request.synchronize"))
    make_bundle(runner.workspace / "models" / "good", name="good-model")
    untrusted = runner.run(bundles="models/good")  # certifi's bundle alone: the handshake fails
    assert untrusted.code == 0 and "The comment was not written" in untrusted.summary
    assert "certificate the runner does not trust" in untrusted.summary
    assert ghes_tls.ours(2) == []
    # The machine's store with the internal CA installed; OpenSSL's SSL_CERT_FILE stands in for it here.
    runner.extra_env = {"SSL_CERT_FILE": str(internal_ca[0])}
    trusted = runner.run(bundles="models/good")
    assert trusted.code == 0, trusted.stdout
    assert "Comment on pull request #2: created" in trusted.stdout and len(ghes_tls.ours(2, BOT)) == 1


# ----- the release gate and the shared cache


POISON = '#!/bin/sh\necho "$0" >> "{mark}"\nexec "{python}" "$@"\n'


def _release_gate() -> dict[str, str]:
    for text in doc_workflows():
        workflow = YAML(typ="safe").load(text)
        if isinstance(workflow["on"], dict) and workflow["on"].get("push", {}).get("tags"):
            return _with(_action_step(workflow["jobs"]["release-check"]), {})
    raise AssertionError("docs/action.md has no release gate on tags")


def _job(tmp_path: Path, name: str, github: FakeGitHub, event: Path, cache: Cache, env: dict[str, str]) -> Runner:
    job = Runner(tmp_path / name, github, event, cache)
    make_bundle(job.workspace / "models" / "good", name="good-model")
    job.extra_env = env
    return job


def test_the_release_gate_never_runs_what_the_shared_cache_holds(
    tmp_path: Path, github: FakeGitHub, event_file: Callable[..., Path]
) -> None:
    cache, mark = Cache(tmp_path / "cache"), tmp_path / "poison-ran"
    branch = {"GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/master"}
    main = _job(tmp_path, "main", github, event_file("push.branch"), cache, branch)
    assert main.run(bundles="models/good", comment="never").code == 0
    assert len(cache.saved) == 1  # a push to the default branch saves the environment
    # Someone able to write this cache scope replaces the environment's Python (a .pth file would do the same).
    planted = cache.entry(cache.saved[0]) / "bin" / "python"
    planted.write_text(POISON.format(mark=mark, python=sys.executable), encoding="utf-8")
    tag = {"GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/tags/v1.0.0"}
    gate = _job(tmp_path, "gate", github, event_file("push.tag"), cache, tag)
    run = gate.run(**_release_gate())
    assert run.code == 0, run.stderr
    assert not mark.exists() and cache.restored == [] and len(cache.saved) == 1
    assert {"cache", "Save the checker's environment"} <= set(run.skipped)
    target = {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_REF": "refs/heads/master"}
    privileged = _job(tmp_path, "target", github, event_file("pull_request.synchronize"), cache, target)
    assert privileged.run(bundles="models/good", comment="never").code == 0
    assert not mark.exists() and cache.restored == []
    # The same cache on a pull_request run is restored, and what was planted runs: the gate's care is needed.
    pull = _job(tmp_path, "pull", github, event_file("pull_request.synchronize"), cache, {})
    assert pull.run(bundles="models/good", comment="never").code == 0
    assert cache.restored == cache.saved and mark.exists()


# ----- the log after the fence


DRIVER = """\
import sys

from checker import verify as verify_module
from checker.cli import main


def runtime_stage(ctx):
    forged = "::error title=Forged::from a traceback\\r::add-mask::x\\n  ##[set-output name=status;]pass"
    raise RuntimeError("a bug\\n" + forged)
    yield


verify_module.AFTER_SCHEMA = (*verify_module.AFTER_SCHEMA[:4], runtime_stage)
args = sys.argv[1:]
raise SystemExit(main(args[args.index("checker") + 1 :]))
"""


def test_a_crash_traceback_cannot_act_as_a_workflow_command(runner: Runner, tmp_path: Path) -> None:
    driver = tmp_path / "crash.py"
    driver.write_text(DRIVER, encoding="utf-8")
    runner.python.parent.mkdir(parents=True)
    runner.python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{driver}" "$@"\n', encoding="utf-8")
    runner.python.chmod(0o755)
    run = runner.run(bundles="models/good")
    assert run.code == 3, run.stderr
    assert "RuntimeError: a bug" in run.stderr and "Forged" in run.stderr
    lines = re.split(r"\r\n|\r|\n", run.stderr)
    assert [line for line in lines if line.lstrip().startswith("::")] == []
    assert "##[" not in run.stderr
