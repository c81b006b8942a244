"""The action's `attest` input: the verdict written as a signed attestation, named by the `attestation` output,
for actions/upload-artifact and a release to carry; the key comes from a secret and is never shown or written."""

from __future__ import annotations

import json
from pathlib import Path

from actionrunner import Run, Runner
from fakegithub import FakeGitHub
from signkit import KeyFiles, key_pair

from checker.context import Trust
from checker.reports.files import read_report
from checker.signing.attest import verified_statements


def assert_key_not_shown(run: Run, keys: KeyFiles, workspace: Path) -> None:
    body = "".join(keys.private.read_text().splitlines()[1:-1])  # the key's base64, however it is wrapped
    shown = [run.stdout, run.stderr, run.summary, *run.files, *run.outputs.values()]
    shown += [p.read_text(errors="replace") for p in workspace.rglob("*") if p.is_file() and p.stat().st_size < 1 << 20]
    for text in shown:
        assert body[:40] not in text.replace("\n", "")


def test_attest_writes_a_trusted_attestation_of_the_verdict(runner: Runner, github: FakeGitHub, tmp_path: Path) -> None:
    keys = key_pair(tmp_path / "keys")
    run = runner.run(
        bundles="models/good", comment="never", attest="true", attest_key=keys.private.read_text(),
        attestation="m.intoto.jsonl",
    )  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.outputs["attestation"] == "m.intoto.jsonl" and run.outputs["status"] == "pass"
    assert "Attestation of 1 bundle(s) written to m.intoto.jsonl" in run.stdout
    report = read_report(runner.workspace / "checker-report.json")
    statements, count = verified_statements(runner.workspace / "m.intoto.jsonl", Trust(key=keys.public))
    assert count == 1 and len(statements) == 1
    (statement,) = statements
    assert statement["subject"][0]["digest"]["sha256"] == report["bundles"][0]["digest"].removeprefix("sha256:")
    assert statement["predicate"]["verificationResult"] == "PASSED"
    other = key_pair(tmp_path / "other", "other")
    assert verified_statements(runner.workspace / "m.intoto.jsonl", Trust(key=other.public))[0] == []
    assert_key_not_shown(run, keys, runner.workspace)
    assert github.seen == []


def test_without_attest_there_is_no_attestation(runner: Runner) -> None:
    run = runner.run(bundles="models/good", comment="never")
    assert run.code == 0 and run.outputs["attestation"] == ""
    assert not (runner.workspace / "checker-attestation.intoto.jsonl").exists()


def test_attest_needs_a_key_and_a_verification(runner: Runner, tmp_path: Path) -> None:
    run = runner.run(bundles="models/good", comment="never", attest="true")
    assert run.code == 2 and "attest-key" in run.summary and run.outputs["attestation"] == ""
    keys = key_pair(tmp_path / "keys")
    run = runner.run(mode="comment-only", attest="true", attest_key=keys.private.read_text())
    assert run.code == 2 and "comment-only" in run.summary
    run = runner.run(bundles="models/good", comment="never", attest="yes")
    assert run.code == 2 and "attest must be true or false" in run.summary
    run = runner.run(bundles="models/good", comment="never", attest="true", attest_key="not a key")
    assert run.code == 2 and "not a PEM private key" in run.stderr
    assert "not a key" not in run.stderr.replace("not a PEM", "")
    assert not list(runner.workspace.glob("*.intoto.jsonl"))


def test_a_failing_verdict_is_attested_as_failed(runner: Runner, tmp_path: Path) -> None:
    keys = key_pair(tmp_path / "keys")
    run = runner.run(bundles="models/bad", comment="never", attest="true", attest_key=keys.private.read_text())
    assert run.code == 1 and run.outputs["attestation"] == "checker-attestation.intoto.jsonl"
    lines = (runner.workspace / "checker-attestation.intoto.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["signatures"]
    (statement,), _ = verified_statements(runner.workspace / run.outputs["attestation"], Trust(key=keys.public))
    assert statement["predicate"]["verificationResult"] == "FAILED"
