"""`checker verify --attest OUT` and `--require-attestation FILE`: the verdict as a signed in-toto Statement
about the bundle digest, accepted elsewhere for exactly that digest without running the comparison again."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from releasekit import edit
from signkit import KeyFiles, key_pair

from checker.release.lock import lock
from checker.signing.attest import PREDICATE_TYPE, STATEMENT_TYPE, policy_digest

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def keys(tmp_path: Path) -> KeyFiles:
    return key_pair(tmp_path / "keys")


def attest(cli: Cli, bundle: Path, keys: KeyFiles, out: Path) -> dict[str, Any]:
    report = out.with_suffix(".report.json")
    code, _, err = cli(
        "verify", bundle, "--attest", out, "--attest-key", keys.private, "--format", "json", "-o", report
    )
    assert code in (0, 1), err
    return json.loads(report.read_text())


def accept(cli: Cli, bundle: Path, attestation: Path, key: Path) -> tuple[int, dict[str, Any]]:
    out = attestation.parent / "accepted.json"
    code, _, err = cli(
        "verify", bundle, "--require-attestation", attestation, "--trusted-key", key, "--format", "json", "-o", out
    )
    assert code in (0, 1), err
    return code, json.loads(out.read_text())["bundles"][0]


def statements(path: Path) -> list[dict[str, Any]]:
    return [json.loads(base64.b64decode(json.loads(line)["payload"])) for line in path.read_text().splitlines()]


def test_the_attestation_is_a_signed_verification_summary_of_the_digest(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    report = attest(cli, example, keys, tmp_path / "a.intoto.jsonl")
    bundle = report["bundles"][0]
    (envelope,) = [json.loads(line) for line in (tmp_path / "a.intoto.jsonl").read_text().splitlines()]
    assert envelope["payloadType"] == "application/vnd.in-toto+json" and envelope["signatures"][0]["sig"]
    (statement,) = statements(tmp_path / "a.intoto.jsonl")
    assert statement["_type"] == STATEMENT_TYPE and statement["predicateType"] == PREDICATE_TYPE
    assert statement["subject"][0]["digest"] == {"sha256": bundle["digest"].removeprefix("sha256:")}
    predicate = statement["predicate"]
    assert predicate["verificationResult"] == "PASSED"
    assert predicate["verifier"]["version"]["onnx-release-checker"] == report["checker_version"]
    assert predicate["policy"]["digest"]["sha256"] == policy_digest(bundle)
    assert predicate["timeVerified"] == report["created_at"]
    assert [(c["graph"], c["against"], c["status"]) for c in predicate["comparisons"]] == [
        (c["graph"], c["against"], c["status"]) for c in bundle["comparisons"]
    ]
    assert predicate["runtimes"][0]["runtime"].startswith("onnxruntime ")


def test_an_attestation_is_accepted_on_another_machine_for_the_same_digest_only(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    attestation = tmp_path / "a.intoto.jsonl"
    attest(cli, example, keys, attestation)
    device = tmp_path / "device" / "m"
    shutil.copytree(example, device)
    shipped = tmp_path / "device" / "a.intoto.jsonl"
    shutil.copy(attestation, shipped)
    code, bundle = accept(cli, device, shipped, keys.public)
    assert code == 0 and bundle["comparisons"] == []  # accepted without running the comparison
    assert "attestation.accepted" in [f["id"] for f in bundle["findings"]]

    def loosen(tree: Any) -> None:
        tree["variants"][0]["rules"][1]["max"] = 0.5

    edit(device / "bundle.yaml", loosen)
    assert lock(device).ok  # a consistent release, but another one
    code, bundle = accept(cli, device, shipped, keys.public)
    assert code == 1 and [f["id"] for f in bundle["findings"] if f["severity"] == "error"] == ["attestation.subject"]


def test_an_attestation_by_another_key_or_altered_is_refused(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    attestation = tmp_path / "a.intoto.jsonl"
    attest(cli, example, keys, attestation)
    other = key_pair(tmp_path / "other", "other")
    code, bundle = accept(cli, example, attestation, other.public)
    assert code == 1 and "attestation.untrusted" in [f["id"] for f in bundle["findings"]]
    envelope = json.loads(attestation.read_text())
    (statement,) = statements(attestation)
    statement["predicate"]["timeVerified"] = "2000-01-01T00:00:00Z"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    attestation.write_text(json.dumps(envelope) + "\n")
    code, bundle = accept(cli, example, attestation, keys.public)
    assert code == 1 and "attestation.untrusted" in [f["id"] for f in bundle["findings"]]


def test_an_attested_failure_is_not_accepted(cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path) -> None:
    logits = example / "cases" / "meadow" / "logits.npy"
    np.save(logits, np.load(logits) + 1.0)  # a reference the graph no longer reproduces, on any CPU
    assert lock(example).ok
    attestation = tmp_path / "a.intoto.jsonl"
    report = attest(cli, example, keys, attestation)
    assert report["status"] == "fail"
    assert statements(attestation)[0]["predicate"]["verificationResult"] == "FAILED"
    code, bundle = accept(cli, example, attestation, keys.public)
    assert code == 1 and "attestation.failed" in [f["id"] for f in bundle["findings"]]


def test_attestation_options_need_their_keys(cli: Cli, example: Path, tmp_path: Path) -> None:
    code, _, err = cli("verify", example, "--attest", tmp_path / "a.jsonl")
    assert code == 2 and "--attest-key" in err
    (tmp_path / "a.jsonl").write_text("")
    code, _, err = cli("verify", example, "--require-attestation", tmp_path / "a.jsonl")
    assert code == 2 and "--trusted-key" in err
