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
from signkit import KeyFiles, certificate_chain, key_pair

from checker.release.lock import lock
from checker.signing.attest import PREDICATE_TYPE, STATEMENT_TYPE, policy_digest, sign_statement
from checker.signing.dsse import EnvelopeSigner

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
    code, _, err = cli("verify", example, "--attest", tmp_path / "b.jsonl", "--attest-key", tmp_path / "a.jsonl",
                       "--shard", "1/2")  # fmt: skip
    assert code == 2 and "--shard" in err
    attested = ["--require-attestation", tmp_path / "a.jsonl", "--trusted-key", tmp_path / "a.jsonl"]
    code, _, err = cli(
        "verify", example, *attested, "--attest", tmp_path / "b.jsonl", "--attest-key", tmp_path / "a.jsonl"
    )
    assert code == 2 and "--rerun" in err


class SessionCount:
    """onnxruntime's InferenceSession, counting the sessions the run opens (each still a real session)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import onnxruntime as ort

        self.opened = 0
        real = ort.InferenceSession
        count = self

        class Counted(real):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                count.opened += 1
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(ort, "InferenceSession", Counted)


def accept_here(cli: Cli, bundle: Path, attestation: Path, key: Path, *more: str) -> tuple[int, dict[str, Any]]:
    """`--require-attestation` in this process, one bundle at a time, so that its sessions can be counted."""
    out = attestation.parent / "accepted.json"
    args = ["--require-attestation", attestation, "--trusted-key", key, *more]
    code, _, err = cli("verify", bundle, *args, "--jobs", "1", "--format", "json", "-o", out)
    assert code in (0, 1), err
    return code, json.loads(out.read_text())["bundles"][0]


def test_acceptance_opens_no_session_and_rerun_judges_again(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attestation = tmp_path / "a.intoto.jsonl"
    attest(cli, example, keys, attestation)
    sessions = SessionCount(monkeypatch)
    code, bundle = accept_here(cli, example, attestation, keys.public)
    assert code == 0 and sessions.opened == 0 and bundle["comparisons"] == []
    code, bundle = accept_here(cli, example, attestation, keys.public, "--rerun")
    assert code == 0 and sessions.opened > 0
    assert {(c["graph"], c["against"], c["status"]) for c in bundle["comparisons"]} >= {
        ("baseline", "reference", "pass"),
        ("int8", "reference", "pass"),
    }
    assert "rerun" in next(f["message"] for f in bundle["findings"] if f["id"] == "attestation.accepted")
    assert not [f for f in bundle["findings"] if f["id"] == "attestation.rerun_differs"]


def test_rerun_fails_when_this_machine_does_not_reproduce_the_attested_verdict(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    def exact(tree: Any) -> None:
        tree["variants"][0]["rules"][1]["max"] = 1.0e-9  # no int8 graph matches float scores that closely

    edit(example / "bundle.yaml", exact)
    assert lock(example).ok
    honest = tmp_path / "honest.intoto.jsonl"
    assert attest(cli, example, keys, honest)["status"] == "fail"
    # The publisher's machine judged this very digest a pass (its kernels, say): a trusted, signed attestation.
    (statement,) = statements(honest)
    statement["predicate"]["verificationResult"] = "PASSED"
    for entry in statement["predicate"]["comparisons"]:
        entry["status"] = "pass"
    attestation = tmp_path / "a.intoto.jsonl"
    attestation.write_text(json.dumps(sign_statement(statement, EnvelopeSigner(keys.private))) + "\n")

    code, _ = accept(cli, example, attestation, keys.public)
    assert code == 0  # accepted as attested, without running the comparison
    out = tmp_path / "rerun.json"
    args = ["--require-attestation", attestation, "--trusted-key", keys.public, "--rerun"]
    code, _, err = cli("verify", example, *args, "--format", "json", "-o", out)
    assert code == 1, err
    findings = json.loads(out.read_text())["bundles"][0]["findings"]
    differs = [f for f in findings if f["id"] == "attestation.rerun_differs"]
    assert [(f["details"]["graph"], f["details"]["against"]) for f in differs] == [("int8", "reference")]
    assert differs[0]["details"] == {"graph": "int8", "against": "reference", "attested": "pass", "rerun": "fail"}
    assert "int8 against reference" in differs[0]["message"]


def test_rerun_needs_an_attestation(cli: Cli, example: Path) -> None:
    code, _, err = cli("verify", example, "--rerun")
    assert code == 2 and "--require-attestation" in err


def test_an_attestation_signed_with_a_certificate_is_trusted_through_its_ca(
    cli: Cli, example: Path, tmp_path: Path
) -> None:
    chain = certificate_chain(tmp_path / "pki")
    attestation = tmp_path / "a.intoto.jsonl"
    report = tmp_path / "a.report.json"
    signer = ["--attest-key", chain.key, "--attest-certificate", chain.certificate]
    code, _, err = cli(
        "verify", example, "--attest", attestation, *signer, "--attest-certificate-chain", chain.ca,
        "--format", "json", "-o", report,
    )  # fmt: skip
    assert code == 0, err
    (envelope,) = [json.loads(line) for line in attestation.read_text().splitlines()]
    assert envelope["signatures"][0]["certificates"][0] == chain.certificate.read_text()
    out = tmp_path / "accepted.json"

    def accept_with(*trust: Any) -> tuple[int, list[str]]:
        args = ["--require-attestation", attestation, *trust]
        code, _, err = cli("verify", example, *args, "--format", "json", "-o", out)
        assert code in (0, 1), err
        return code, [f["id"] for f in json.loads(out.read_text())["bundles"][0]["findings"]]

    code, ids = accept_with("--trusted-certificate", chain.ca)
    assert code == 0 and "attestation.accepted" in ids
    stranger = certificate_chain(tmp_path / "other", "stranger")
    code, ids = accept_with("--trusted-certificate", stranger.ca)
    assert code == 1 and "attestation.untrusted" in ids
    # The signing certificate itself is no trust anchor: only a CA above it is.
    code, ids = accept_with("--trusted-certificate", chain.certificate)
    assert code == 1 and "attestation.untrusted" in ids


def test_a_certificate_of_another_key_cannot_sign_an_attestation(cli: Cli, example: Path, tmp_path: Path) -> None:
    chain = certificate_chain(tmp_path / "pki")
    other = key_pair(tmp_path / "other", "other")
    code, _, err = cli(
        "verify", example, "--attest", tmp_path / "a.jsonl", "--attest-key", other.private,
        "--attest-certificate", chain.certificate,
    )  # fmt: skip
    assert code == 2 and "not the certificate of --attest-key" in err


def test_a_sigstore_attestation_without_sigstore_reachable_is_untrusted_not_a_crash(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    """Keyless attestations need Sigstore's trust root, which the tests cannot reach: the refusal says why."""
    attestation = tmp_path / "a.intoto.jsonl"
    attest(cli, example, keys, attestation)
    envelope = json.loads(attestation.read_text())
    keyless = {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json", "dsseEnvelope": envelope}
    attestation.write_text(json.dumps(keyless) + "\n")
    out = tmp_path / "accepted.json"
    identity = ["--sigstore-identity", "https://github.com/o/r/.github/workflows/release.yml@refs/tags/v1"]
    issuer = ["--sigstore-issuer", "https://token.actions.githubusercontent.com"]
    code, _, err = cli(
        "verify", example, "--require-attestation", attestation, *identity, *issuer, "--format", "json", "-o", out
    )
    assert code == 1, err
    (finding,) = [f for f in json.loads(out.read_text())["bundles"][0]["findings"] if f["id"].startswith("attest")]
    assert finding["id"] == "attestation.untrusted" and "Sigstore" in finding["message"]
    # The key that signed the envelope inside is not asked: a Sigstore line is checked for its identity only.
    code, bundle = accept(cli, example, attestation, keys.public)
    assert code == 1 and "attestation.untrusted" in [f["id"] for f in bundle["findings"]]


def test_sigstore_attestation_flags(cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    code, _, err = cli("verify", example, "--attest", out, "--attest-sigstore", "--attest-key", keys.private)
    assert code == 2 and "keyless" in err
    code, _, err = cli("verify", example, "--attest-sigstore")
    assert code == 2 and "--attest OUT" in err
    out.write_text("")
    code, _, err = cli("verify", example, "--require-attestation", out, "--sigstore-identity", "me")
    assert code == 2 and "--sigstore-issuer" in err
