"""docs/action.md's zoo workflow, job by job, as the runner runs action.yml against a loopback GitHub: a push to
the default branch plans, verifies every bundle in the matrix legs, attests each verdict into the legs' stores,
which the last job saves to the cache; a pull request that changes one bundle then plans one leg of that bundle,
reuses the stored verdicts of the rest, and posts one comment of the whole zoo."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

from actionrunner import Cache, Run, Runner
from fakegithub import FakeGitHub
from ghsupport import HEAD, make_bundle
from signkit import key_pair

STORE = "checker-verdicts"
PUBLIC = ".github/checker-attest.pub"
FAST = "--gain-budget 0"  # the same in every job: the key is made of the options


class Zoo:
    """The repository (what each job checks out), the cache scope the jobs share, and the signing key."""

    def __init__(self, tmp: Path, github: FakeGitHub) -> None:
        self.tmp, self.github = tmp, github
        self.source = tmp / "source"
        for i in range(4):
            make_bundle(self.source / "models" / f"d{i}", name=f"d{i}")
        keys = key_pair(tmp / "keys")
        (self.source / ".github").mkdir()
        shutil.copy(keys.public, self.source / PUBLIC)
        self.secret = keys.private.read_text()
        self.cache = Cache(tmp / "cache")
        self.jobs = 0

    def job(self, event: Path, env: dict[str, str], **inputs: str) -> tuple[Runner, Run]:
        self.jobs += 1
        runner = Runner(self.tmp / f"job-{self.jobs}", self.github, event, self.cache)
        shutil.copytree(self.source, runner.workspace, dirs_exist_ok=True)  # actions/checkout
        runner.extra_env = env
        return runner, runner.run(**inputs)

    def plan(self, event: Path, env: dict[str, str]) -> tuple[Runner, Run]:
        runner, run = self.job(
            event, env, mode="plan", bundles="models/*", reuse=STORE, trusted_key=PUBLIC, shards="2", args=FAST,
            report="checker-report-plan.json",
        )  # fmt: skip
        assert run.code == 0, run.stdout + run.stderr
        return runner, run

    def legs(self, event: Path, env: dict[str, str], matrix: str, attest: bool) -> list[Runner]:
        runners = []
        for leg in json.loads(matrix)["include"]:
            signing = {"attest": "true", "attest_key": self.secret} if attest else {}
            runner, run = self.job(
                event, env, mode="verify-only", bundles=leg["bundles"], args=f"{FAST} {leg['args']}".strip(),
                report=f"checker-report-{leg['leg']}.json", fail_on="never", reuse=STORE, trusted_key=PUBLIC,
                **signing,
            )  # fmt: skip
            assert run.code == 0, run.stdout + run.stderr
            runners.append(runner)
        return runners


def _reports(runners: list[Runner], folder: Path) -> Path:
    """actions/download-artifact with merge-multiple: every job's checker-report-*.json in one folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for runner in runners:
        for report in runner.workspace.glob("checker-report-*.json"):
            shutil.copy(report, folder / report.name)
    return folder


def test_a_pull_request_of_a_zoo_runs_what_it_changed_and_reuses_the_rest(
    tmp_path: Path, github: FakeGitHub, event_file: Callable[..., Path]
) -> None:
    zoo = Zoo(tmp_path, github)
    push = event_file("push.branch")
    on_main = {"GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main", "GITHUB_SHA": "6" * 40}

    # The default branch: nothing stored yet, so every bundle runs, in two legs, and each verdict is attested.
    _, planned = zoo.plan(push, on_main)
    assert (planned.outputs["legs"], planned.outputs["reused"]) == ("2", "0")
    legs = zoo.legs(push, on_main, planned.outputs["matrix"], attest=True)
    assert sorted(b for leg in legs for b in (leg.workspace / STORE).glob("*.intoto.jsonl"))  # each leg stored some
    # The report job: the legs' stores joined (download-artifact, merge-multiple) and saved to the cache.
    joined = tmp_path / "report-job" / STORE
    for leg in legs:
        shutil.copytree(leg.workspace / STORE, joined, dirs_exist_ok=True)
    zoo.cache.save("onnx-release-checker-verdicts-Linux-X64-1", joined)
    assert len(list(joined.glob("*.intoto.jsonl"))) == 4

    # A pull request that changes one bundle: one leg of it; the others' verdicts come from the store.
    manifest = zoo.source / "models" / "d2" / "bundle.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1.0.0", "version: 1.0.1"))
    github.add_pull(2, HEAD)
    pull = event_file("pull_request.synchronize")
    plan_job, planned = zoo.plan(pull, {})
    assert (planned.outputs["legs"], planned.outputs["reused"]) == ("1", "3")
    [leg] = json.loads(planned.outputs["matrix"])["include"]
    assert shlex.split(leg["bundles"]) == ["models/d2"]
    assert "onnx-release-checker-verdicts-Linux-X64-1" in zoo.cache.restored
    assert "3 reused from the verdict store" in planned.summary
    legs = zoo.legs(pull, {}, planned.outputs["matrix"], attest=False)
    assert not list((legs[0].workspace / STORE).glob("d2*"))  # a pull request's leg adds nothing to any store

    # The report job: one comment of the four bundles.
    reports = _reports([plan_job, *legs], tmp_path / "pr-report-job" / "reports")
    comment_job = Runner(tmp_path / "pr-report-job", github, pull, zoo.cache)
    shutil.copytree(reports, comment_job.workspace / "reports")
    run = comment_job.run(mode="comment-only", report="reports/*.json")
    assert run.code == 0, run.stdout + run.stderr
    [comment] = github.comments[2]
    body = comment["body"]
    assert body.startswith("<!--") and "## ✅ ONNX release check: 4 bundles passed" in body
    # What ran and changed first; the reused verdicts in one line with a fold, one line each inside it.
    assert body.index("d2 1.0.1") < body.index("♻️ 3 bundles not run again")
    assert "signed by the key checker-attest.pub, reused</summary>" in body
    assert all(f"d{i} 1.0.0" in body for i in (0, 1, 3)) and body.count("reused: verdict of") == 3


def test_the_zoo_inputs_are_checked() -> None:
    import pytest

    from checker.errors import UsageError
    from checker.github.config import Config

    for inputs, said in (
        ({"INPUT_REUSE": STORE}, "trusted-key"),
        ({"INPUT_MODE": "plan", "INPUT_SHARDS": "0"}, "shards"),
        ({"INPUT_MODE": "plan", "INPUT_SHARDS": "many"}, "shards"),
        ({"INPUT_MODE": "plan", "INPUT_ATTEST": "true", "INPUT_ATTEST_KEY": "k"}, "plan verifies nothing"),
        ({"INPUT_MODE": "plan", "INPUT_COMPARE_TO": "base"}, "compare-to"),
        ({"INPUT_REUSE": STORE, "INPUT_TRUSTED_KEY": PUBLIC, "INPUT_COMPARE_TO": "base"}, "compare-to with reuse"),
    ):
        with pytest.raises(UsageError, match=said):
            Config.from_env(inputs)
    config = Config.from_env({"INPUT_MODE": "plan", "INPUT_SHARDS": "8", "INPUT_CHANGED_SINCE": "base"})
    assert (config.shards, config.changed_since) == (8, "base")
