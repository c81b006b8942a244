"""Attestations a device or a verdict store can rely on: the statement records what its run did not check (the
checks not run, the platforms judged, whether warnings failed), and `--require-attestation` refuses what the
attesting run let through but this run's options do not; a digest written by the bundle digest's earlier
definition is said to be one; `pack` never ships a signature that no longer matches; a certificate issued
straight by the root signs without a chain."""

from __future__ import annotations

import base64
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from releasekit import edit
from signkit import KeyFiles, certificate_chain, key_pair

from checker.manifest.load import load_manifest
from checker.manifest.named import named_files
from checker.platforms.catalog import known_classes
from checker.platforms.features import this_machine
from checker.readers.digest import bundle_digest, sha256_file
from checker.release.lock import lock
from checker.signing.attest import sign_statement
from checker.signing.dsse import EnvelopeSigner

Cli = Callable[..., tuple[int, str, str]]
OPENVINO = "OpenVINOExecutionProvider"


@pytest.fixture
def keys(tmp_path: Path) -> KeyFiles:
    return key_pair(tmp_path / "keys")


def attest(cli: Cli, bundle: Path, keys: KeyFiles, out: Path, *more: Any) -> dict[str, Any]:
    report = out.with_suffix(".report.json")
    args = ["--attest", out, "--attest-key", keys.private, "--format", "json", "-o", report, *more]
    code, _, err = cli("verify", bundle, *args)
    assert code in (0, 1), err
    return dict(json.loads(report.read_text())["bundles"][0])


def accept(cli: Cli, bundle: Path, attestation: Path, key: Path, *more: Any) -> tuple[int, dict[str, Any]]:
    out = attestation.parent / "accepted.json"
    args = ["--require-attestation", attestation, "--trusted-key", key, *more, "--format", "json", "-o", out]
    code, _, err = cli("verify", bundle, *args)
    assert code in (0, 1), err
    return code, dict(json.loads(out.read_text())["bundles"][0])


def predicate(path: Path) -> dict[str, Any]:
    (line,) = path.read_text().splitlines()
    return dict(json.loads(base64.b64decode(json.loads(line)["payload"]))["predicate"])


def errors(bundle: dict[str, Any]) -> list[str]:
    return [f["id"] for f in bundle["findings"] if f["severity"] == "error"]


def declare_openvino(tree: Any) -> None:
    """OpenVINO declared with its CPU fallback forbidden: this machine's onnxruntime lacks it, so its placement is
    a check not run here."""
    tree["runtime"]["execution_providers"] = [OPENVINO, "CPUExecutionProvider"]
    tree["runtime"]["fallback"] = "forbid"


def test_a_pass_with_a_check_not_run_is_refused_under_strict(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    edit(example / "bundle.yaml", declare_openvino)
    assert lock(example).ok
    attestation = tmp_path / "a.intoto.jsonl"
    bundle = attest(cli, example, keys, attestation)
    assert bundle["status"] == "pass" and [n["check"] for n in bundle["not_run"]] == [f"placement of {OPENVINO}"]
    recorded = predicate(attestation)
    assert recorded["verificationResult"] == "PASSED" and recorded["strict"] is False
    assert recorded["notRun"] == bundle["not_run"]
    # The device that asks for --strict does not take the pass: what was not checked there is not checked here.
    code, device = accept(cli, example, attestation, keys.public, "--strict")
    assert code == 1 and "attestation.strict" in errors(device)
    refusal = next(f["message"] for f in device["findings"] if f["id"] == "attestation.strict")
    assert "1 check not run: placement of OpenVINOExecutionProvider" in refusal
    assert "attestation.accepted" not in [f["id"] for f in device["findings"]]
    # Without --strict it is accepted, and the verdict still says what was never checked.
    code, device = accept(cli, example, attestation, keys.public)
    assert code == 0 and "attestation.accepted" in [f["id"] for f in device["findings"]]
    assert [n["check"] for n in device["not_run"]] == [f"attested: placement of {OPENVINO}"]


def test_a_pass_with_warnings_is_refused_under_strict_unless_it_was_strict(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    (example / "notes.txt").write_text("a file the manifest does not name\n")  # bundle.unlisted: a warning
    lenient, strict = tmp_path / "lenient.intoto.jsonl", tmp_path / "strict.intoto.jsonl"
    assert attest(cli, example, keys, lenient)["status"] == "pass"
    assert predicate(lenient)["findings"]["warning"] == {"bundle.unlisted": 1}
    code, device = accept(cli, example, lenient, keys.public, "--strict")
    assert code == 1 and "attestation.strict" in errors(device)
    assert "1 warning (bundle.unlisted)" in next(
        f["message"] for f in device["findings"] if f["id"] == "attestation.strict"
    )
    (example / "notes.txt").unlink()
    assert attest(cli, example, keys, strict, "--strict")["status"] == "pass"
    assert predicate(strict)["strict"] is True
    code, device = accept(cli, example, strict, keys.public, "--strict")
    assert code == 0, device["findings"]


def test_an_attestation_that_records_nothing_of_this_is_refused_under_strict(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    attestation = tmp_path / "a.intoto.jsonl"
    attest(cli, example, keys, attestation)
    (line,) = attestation.read_text().splitlines()
    statement = json.loads(base64.b64decode(json.loads(line)["payload"]))
    for field in ("notRun", "strict", "findings", "platforms"):  # as an earlier checker wrote it
        del statement["predicate"][field]
    older = tmp_path / "older.intoto.jsonl"
    older.write_text(json.dumps(sign_statement(statement, EnvelopeSigner(keys.private))) + "\n")
    assert accept(cli, example, older, keys.public)[0] == 0
    code, device = accept(cli, example, older, keys.public, "--strict")
    assert code == 1 and errors(device) == ["attestation.strict"]


def _entry(cpu_class: str, name: str) -> dict[str, Any]:
    [platform] = [p for p in known_classes() if p.cpu_class == cpu_class]
    entry: dict[str, Any] = {"name": name, "arch": platform.arch}
    if platform.level:
        entry["cpu"] = platform.level
    if platform.features:
        entry["features"] = list(platform.features)
    return entry


def test_an_attestation_of_a_run_that_did_not_judge_a_declared_platform_is_refused(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    here = this_machine()[0]
    other = "aarch64-dotprod" if here.startswith("x86") else "x86-64-v3"

    def platforms(*entries: dict[str, Any]) -> Callable[[Any], None]:
        def change(tree: Any) -> None:
            tree["runtime"]["platforms"] = list(entries)

        return change

    edit(example / "bundle.yaml", platforms(_entry(here, "build-machine")))
    assert lock(example).ok
    attestation = tmp_path / "a.intoto.jsonl"
    attest(cli, example, keys, attestation)  # a declared platform is judged by default: natively, here
    judged = predicate(attestation)["platforms"]
    assert {"name": "host", "class": here, "how": "native"} in judged
    assert {"name": "build-machine", "class": here, "how": "native"} in judged
    assert accept(cli, example, attestation, keys.public)[0] == 0  # the declared class is the one judged

    edit(example / "bundle.yaml", platforms(_entry(here, "build-machine"), _entry(other, "device")))
    assert lock(example).ok
    # Judged on the build machine only (--platform narrows the declared ones): the device's class was not run.
    attest(cli, example, keys, attestation, "--platform", "build-machine")
    code, device = accept(cli, example, attestation, keys.public)
    assert code == 1 and errors(device) == ["attestation.platforms"]
    refusal = next(f for f in device["findings"] if f["id"] == "attestation.platforms")
    assert f"device ({other})" in refusal["message"] and refusal["line"] and refusal["details"]["missing"] == ["device"]


def _files_only_digest(bundle: Path) -> str:
    manifest, _ = load_manifest(bundle / "bundle.yaml")
    assert manifest is not None
    files = {entry.rel: sha256_file(bundle / entry.rel) for entry in named_files(manifest.data, bundle)}
    return bundle_digest(files)  # the earlier definition: the named files, no manifest field


def test_a_digest_of_the_earlier_definition_is_said_to_be_one(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    earlier = _files_only_digest(example)
    text = (example / "bundle.yaml").read_text()
    current = next(line.split()[-1] for line in text.splitlines() if line.strip().startswith("digest:"))
    (example / "bundle.yaml").write_text(text.replace(current, earlier))
    code, out, _ = cli("verify", example, "--format", "json")
    [finding] = [f for f in json.loads(out)["bundles"][0]["findings"] if f["id"] == "bundle.digest"]
    assert code == 1 and "earlier definition of the bundle digest" in finding["message"]
    assert finding["details"]["definition"] == 1
    assert "named file or a manifest field changed" not in finding["message"]
    (example / "bundle.yaml").write_text(text)

    # An attestation of the earlier digest (an earlier checker's) is about this bundle's files, not its rules.
    attestation = tmp_path / "a.intoto.jsonl"
    attest(cli, example, keys, attestation)
    (line,) = attestation.read_text().splitlines()
    statement = json.loads(base64.b64decode(json.loads(line)["payload"]))
    assert statement["subject"][0]["annotations"] == {"digestDefinition": 2}
    statement["subject"] = [{"name": statement["subject"][0]["name"], "digest": {"sha256": earlier[7:]}}]
    attestation.write_text(json.dumps(sign_statement(statement, EnvelopeSigner(keys.private))) + "\n")
    code, device = accept(cli, example, attestation, keys.public)
    [subject] = [f for f in device["findings"] if f["id"] == "attestation.subject"]
    assert code == 1 and "by the earlier definition of the bundle digest" in subject["message"]
    assert subject["details"]["earlier_definition"] is True


def test_pack_refuses_a_signature_that_no_longer_matches_and_verify_warns(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    assert cli("sign", example, "--key", keys.private)[0] == 0

    def loosen(tree: Any) -> None:
        tree["variants"][0]["rules"][1]["max"] = 0.06

    edit(example / "bundle.yaml", loosen)
    assert lock(example).ok  # edited and locked again: bundle.sig still signs the old manifest and digest list
    code, out, _ = cli("verify", example, "--format", "json")
    [stale] = [f for f in json.loads(out)["bundles"][0]["findings"] if f["id"] == "signature.stale"]
    assert stale["severity"] == "warning" and stale["file"] == "bundle.sig"
    assert "changed: bundle.sha256, bundle.yaml" in stale["message"]

    archive = tmp_path / "m.tar.gz"
    code, _, err = cli("pack", example, "-o", archive)
    assert code != 0 and "bundle.sig no longer matches" in err and not archive.exists()
    # Signed again as it is packed: the archive's signature holds on the device.
    code, _, err = cli("pack", example, "-o", archive, "--sign", "--key", keys.private)
    assert code == 0, err
    code, out, _ = cli("verify", archive, "--require-signature", "--trusted-key", keys.public, "--format", "json")
    assert code == 0 and not [f for f in json.loads(out)["bundles"][0]["findings"] if f["id"].startswith("signature")]
    with tarfile.open(archive) as tar:
        assert any(name.endswith("/bundle.sig") for name in tar.getnames())


def test_a_certificate_issued_by_the_root_signs_without_a_chain(cli: Cli, example: Path, tmp_path: Path) -> None:
    chain = certificate_chain(tmp_path / "pki")  # the signing certificate is issued by the CA itself
    code, _, err = cli("sign", example, "--key", chain.key, "--certificate", chain.certificate)
    assert code == 0, err
    signature = json.loads((example / "bundle.sig").read_text())
    assert len(signature["verificationMaterial"]["x509CertificateChain"]["certificates"]) == 1
    code, out, _ = cli("verify", example, "--require-signature", "--trusted-certificate", chain.ca, "--format", "json")
    assert code == 0, [f["message"] for f in json.loads(out)["bundles"][0]["findings"] if f["severity"] == "error"]
    import model_signing

    model_signing.verifying.Config().use_certificate_verifier(certificate_chain=[chain.ca]).set_hashing_config(
        model_signing.hashing.Config().set_ignored_paths(
            paths=json.loads(base64.b64decode(signature["dsseEnvelope"]["payload"]))["predicate"]["serialization"][
                "ignore_paths"
            ]
        )
    ).verify(example, example / "bundle.sig")  # model-signing's own verifier accepts it too
    stranger = certificate_chain(tmp_path / "other", "stranger")
    code, _, _ = cli("verify", example, "--require-signature", "--trusted-certificate", stranger.ca)
    assert code == 1
