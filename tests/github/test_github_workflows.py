"""The action, the project's workflows and the copy-paste workflows of docs/action.md are valid and safe."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "action.md"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PINNED = re.compile(r"[\w.-]+/[\w.-]+(/[\w.-]+)*@[0-9a-f]{40}")


def doc_workflows() -> list[str]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    return [b for b in blocks if "\njobs:" in b]


def check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_the_docs_hold_the_copy_paste_workflows() -> None:
    workflows = [YAML(typ="safe").load(text) for text in doc_workflows()]
    triggers = [w.get("on") for w in workflows]
    # The plain case, the fork pair, a matrix, runtimes x shards, platforms, a release on tags, compare-to base
    # the artifact pair, the attestation attached to the run and the release, and a zoo's three jobs.
    assert len(workflows) == 12
    assert any(isinstance(t, dict) and "workflow_run" in t for t in triggers)
    assert any(isinstance(t, dict) and t.get("push", {}).get("tags") for t in triggers)
    assert any("matrix" in job.get("strategy", {}) for w in workflows for job in w["jobs"].values())
    modes = {step.get("with", {}).get("mode") for w in workflows for j in w["jobs"].values() for step in j["steps"]}
    assert {"verify-only", "comment-only"} <= modes
    compared = {
        step.get("with", {}).get("compare-to") for w in workflows for j in w["jobs"].values() for step in j["steps"]
    }
    assert "base" in compared and "${{ runner.temp }}/base/checker-report.json" in compared
    # The runtime x shard matrix: verify-only jobs, then one comment-only job that merges their reports.
    steps = [step.get("with", {}) for w in workflows for j in w["jobs"].values() for step in j["steps"]]
    assert any(s.get("mode") == "comment-only" and s.get("report") == "reports/*.json" for s in steps)
    assert any(s.get("runtimes") and "--shard" in str(s.get("args")) for s in steps)
    # The platform matrix: a native arm64 leg and an x86 leg, each one --platform.
    matrices = [j.get("strategy", {}).get("matrix") for w in workflows for j in w["jobs"].values()]
    legs = [leg for matrix in matrices if isinstance(matrix, dict) for leg in matrix.get("include", [])]
    assert {"ubuntu-24.04-arm", "ubuntu-24.04"} <= {leg.get("runner") for leg in legs}
    assert any(s.get("args") == "--platform ${{ matrix.platform }}" for s in steps)
    # The attestation: the action writes it, upload-artifact takes it from the action's output, and the job
    # that attaches it to the release may write contents.
    (attesting,) = [
        j for w in workflows for j in w["jobs"].values() if any(s.get("attest") is True for s in steps_of(j))
    ]
    assert attesting["permissions"] == {"contents": "write"}
    uploads = [s for s in attesting["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert uploads[0]["with"]["path"] == "${{ steps.check.outputs.attestation }}"
    assert any("gh release upload" in str(s.get("run", "")) for s in attesting["steps"])


def test_the_zoo_workflow_plans_verifies_and_saves_the_store_on_the_default_branch_only() -> None:
    [zoo] = [YAML(typ="safe").load(t) for t in doc_workflows() if "mode: plan" in t]
    plan, verify, report = zoo["jobs"]["plan"], zoo["jobs"]["verify"], zoo["jobs"]["report"]
    assert next(s["with"] for s in plan["steps"] if s.get("id") == "plan")["reuse"] == "checker-verdicts"
    assert verify["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert verify["if"] == "needs.plan.outputs.legs != '0'"
    leg = next(s["with"] for s in verify["steps"] if s.get("uses") == "OWNER/REPO@v1")
    assert leg["mode"] == "verify-only" and leg["bundles"] == "${{ matrix.bundles }}"
    assert leg["attest"] == "${{ github.event_name == 'push' }}"
    # The store is saved by one job, and only on a push: never by a pull request's run.
    saves = [s for j in zoo["jobs"].values() for s in j["steps"] if "actions/cache/save@" in str(s.get("uses"))]
    assert [s.get("if") for s in saves] == ["github.event_name == 'push'"]
    assert report["permissions"] == {"pull-requests": "write"}
    assert zoo["on"]["push"]["branches"] == ["main"]


@pytest.mark.skipif(shutil.which("zizmor") is None, reason="zizmor is not installed")
def test_zizmor_finds_nothing_in_the_zoo_workflow(tmp_path: Path) -> None:
    """The zoo's workflow writes a cache and signs with a secret: zizmor audits it (cache poisoning, secrets,
    template injection), with the action pinned as a user pins it."""
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    [zoo] = [t for t in doc_workflows() if "mode: plan" in t]
    (folder / "zoo.yml").write_text(zoo.replace("OWNER/REPO@v1", f"octo-org/checker@{'a' * 40} # v1"), encoding="utf-8")
    command = ["zizmor", "--offline", "--no-progress", str(folder)]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def steps_of(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The `with:` of each step of a job."""
    return [step.get("with", {}) for step in job.get("steps", [])]


def test_every_workflow_starts_with_no_permissions_and_pins_actions() -> None:
    texts = [*doc_workflows(), *(p.read_text(encoding="utf-8") for p in WORKFLOWS)]
    for text in texts:
        workflow = YAML(typ="safe").load(text)
        assert workflow["permissions"] == {}
        for job in workflow["jobs"].values():
            assert "permissions" in job
            for step in job["steps"]:
                uses = step.get("uses", "")
                assert not uses or uses in ("./", "OWNER/REPO@v1") or PINNED.fullmatch(uses), uses
                if uses.startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False


def test_the_workflows_match_githubs_schema(tmp_path: Path) -> None:
    docs = []
    for i, text in enumerate(doc_workflows()):
        docs.append(tmp_path / f"doc-{i}.yml")
        docs[-1].write_text(text, encoding="utf-8")
    done = check_jsonschema("vendor.github-workflows", *WORKFLOWS, *docs)
    assert done.returncode == 0, done.stdout + done.stderr
    done = check_jsonschema("vendor.github-actions", ROOT / "action.yml")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("zizmor") is None, reason="zizmor is not installed")
def test_zizmor_finds_nothing() -> None:
    command = ["zizmor", "--offline", "--no-progress", "action.yml", ".github/workflows/"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout
