"""`checker sign` and `checker verify --require-signature`: model-signing's format, offline key and certificate
signers, and each tampering named by its own finding."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from signkit import KeyFiles, certificate_chain, key_pair

pytest.importorskip("model_signing")

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def keys(tmp_path: Path) -> KeyFiles:
    return key_pair(tmp_path / "keys")


@pytest.fixture
def signed(cli: Cli, example: Path, keys: KeyFiles) -> Path:
    code, out, err = cli("sign", example, "--key", keys.private)
    assert code == 0 and "signed 29 files" in out, err
    return example


def verify(cli: Cli, bundle: Path, *trust: Any) -> tuple[int, list[dict[str, Any]]]:
    out = bundle.parent / "report.json"
    code, _, err = cli("verify", bundle, "--require-signature", *trust, "--format", "json", "-o", out)
    assert code in (0, 1), err
    findings = json.loads(out.read_text())["bundles"][0]["findings"]
    return code, [f for f in findings if f["id"].startswith("signature.")]


def test_a_signed_bundle_passes_and_model_signing_accepts_it(cli: Cli, signed: Path, keys: KeyFiles) -> None:
    assert verify(cli, signed, "--trusted-key", keys.public) == (0, [])
    done = subprocess.run(
        [sys.executable, "-m", "model_signing", "verify", "key", signed,
         "--signature", signed / "bundle.sig", "--public_key", keys.public],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Verification succeeded" in done.stdout + done.stderr


def test_folders_named_like_a_repository_s_are_left_out_only_at_the_top(
    cli: Cli, example: Path, keys: KeyFiles
) -> None:
    """model-signing leaves out the top `.git` and `.github` (and `.gitattributes`, `.gitignore`); a `.git`
    folder further down, or a `.gitlab` one, is the folder's like any other: left out of the signature by
    name when no field names what is in it."""
    for rel in (".git/HEAD", ".github/ci.yml", ".gitignore", "cases/.git/config", ".gitlab/ci.yml", "notes.txt"):
        (example / rel).parent.mkdir(exist_ok=True)
        (example / rel).write_text(rel)
    code, out, err = cli("sign", example, "--key", keys.private)
    assert code == 0 and "signed 29 files" in out, err
    assert verify(cli, example, "--trusted-key", keys.public) == (0, [])
    (example / "notes2.txt").write_text("added")
    code, found = verify(cli, example, "--trusted-key", keys.public)
    assert code == 1 and [(f["id"], f["file"]) for f in found] == [("signature.file_added", "notes2.txt")]


def test_a_folder_that_holds_no_release_file_is_left_out_by_its_name_alone(
    cli: Cli, example: Path, keys: KeyFiles
) -> None:
    """model-signing checks every file against every name left out: a vendored repository's thousands of
    objects, one name each, would cost it hours. A folder that holds no release file is left out whole (what
    is put there later is no release file either); a file added beside the release files is still named."""
    objects = example / "vendor" / ".git" / "objects"
    objects.mkdir(parents=True)
    for i in range(3000):
        (objects / f"o{i:04d}").write_text(str(i))
    (example / "cases" / "README.md").write_text("cases")
    code, out, err = cli("sign", example, "--key", keys.private)
    assert code == 0 and "signed 29 files" in out, err
    statement = json.loads(
        base64.b64decode(json.loads((example / "bundle.sig").read_text())["dsseEnvelope"]["payload"])
    )
    ignored = statement["predicate"]["serialization"]["ignore_paths"]
    assert "vendor" in ignored and "cases/README.md" in ignored and not [p for p in ignored if "objects" in p]
    assert verify(cli, example, "--trusted-key", keys.public) == (0, [])
    (objects / "new").write_text("new")  # in the folder left out whole
    (example / "cases" / "extra.npy").write_bytes(b"x")  # beside release files
    code, found = verify(cli, example, "--trusted-key", keys.public)
    assert code == 1 and [(f["id"], f["file"]) for f in found] == [("signature.file_added", "cases/extra.npy")]


def test_a_signed_bundle_s_files_are_each_read_for_their_digest_once(
    signed: Path, keys: KeyFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signature check hashes the folder's files first; the files stage judges the named ones as read
    there (model-signing's own check of the signature reads them besides: it is its library's)."""
    import os

    from checker.context import Options, Trust
    from checker.readers import digest
    from checker.verify import verify_bundle

    read: list[str] = []
    hash_file = digest.sha256_file

    def counted(path: Path) -> str:
        read.append(os.path.realpath(path))
        return hash_file(path)

    monkeypatch.setattr(digest, "sha256_file", counted)
    report = verify_bundle(signed, Options(gain_budget_s=0.0, trust=Trust(keys.public)))
    assert report.status() == "pass" and not [f for f in report.findings if f.id.startswith("signature.")]
    assert len(read) == len(set(read)) == 29  # every signed file, once
    assert os.path.realpath(signed / "model.onnx") in read


def test_a_file_changed_since_it_was_first_hashed_is_named_by_the_signature_check(signed: Path, keys: KeyFiles) -> None:
    """A verdict store's look-up hands its run the digests it read; a file changed after that is what
    model-signing finds differs, and the signature check then reads every file again and names it."""
    import hashlib

    from checker.context import Options, Trust
    from checker.verify import verify_bundle

    labels = signed / "labels.txt"
    as_looked_up = {"labels.txt": hashlib.sha256(labels.read_bytes()).hexdigest()}
    labels.write_text(labels.read_text().replace("cat", "dog", 1))
    report = verify_bundle(signed, Options(gain_budget_s=0.0, trust=Trust(keys.public)), as_looked_up)
    assert [(f.id, f.file) for f in report.findings if f.id.startswith("signature.")] == [
        ("signature.file_changed", "labels.txt")
    ]
    assert any(f.id == "bundle.digest" and "labels.txt" in f.message for f in report.findings)


def test_a_file_named_with_a_leading_dot_slash_is_signed_and_not_unlisted(
    cli: Cli, example: Path, keys: KeyFiles
) -> None:
    manifest = example / "bundle.yaml"
    manifest.write_text(manifest.read_text().replace("{path: labels.txt,", "{path: ./labels.txt,", 1))
    assert "./labels.txt" in manifest.read_text()
    code, out, err = cli("lock", example)
    assert code == 0, err
    code, out, err = cli("verify", example, "--format", "json", "--strict")
    assert code == 0 and "bundle.unlisted" not in out, out
    code, out, err = cli("sign", example, "--key", keys.private)
    assert code == 0 and "signed 29 files" in out, err
    statement = json.loads(
        base64.b64decode(json.loads((example / "bundle.sig").read_text())["dsseEnvelope"]["payload"])
    )
    assert "labels.txt" in {r["name"] for r in statement["predicate"]["resources"]}
    assert verify(cli, example, "--trusted-key", keys.public) == (0, [])


def test_an_unsigned_bundle_fails(cli: Cli, example: Path, keys: KeyFiles) -> None:
    code, found = verify(cli, example, "--trusted-key", keys.public)
    assert code == 1 and [f["id"] for f in found] == ["signature.missing"]


def test_a_bundle_signed_by_someone_else_fails(cli: Cli, signed: Path, tmp_path: Path) -> None:
    other = key_pair(tmp_path / "other", "other")
    code, found = verify(cli, signed, "--trusted-key", other.public)
    assert code == 1 and [f["id"] for f in found] == ["signature.untrusted"]
    assert "other.pub" in found[0]["message"]


@pytest.mark.parametrize(
    ("tamper", "fid", "name"),
    [
        (lambda b: (b / "labels.txt").write_text("cat\n"), "signature.file_changed", "labels.txt"),
        (lambda b: (b / "cases" / "extra.npy").write_bytes(b"x"), "signature.file_added", "cases/extra.npy"),
        (lambda b: (b / "cases" / "dusk" / "photo.png").unlink(), "signature.file_removed", "cases/dusk/photo.png"),
    ],
    ids=["edited", "added", "removed"],
)
def test_each_tampering_is_named(
    cli: Cli, signed: Path, keys: KeyFiles, tamper: Callable[[Path], Any], fid: str, name: str
) -> None:
    tamper(signed)
    code, found = verify(cli, signed, "--trusted-key", keys.public)
    assert code == 1 and [(f["id"], f["file"]) for f in found] == [(fid, name)]


def test_a_signed_name_outside_the_bundle_is_refused_before_the_library_reads_it(
    cli: Cli, signed: Path, keys: KeyFiles
) -> None:
    outside = signed.parent / "x"
    outside.write_text("outside the bundle")
    signature = signed / "bundle.sig"
    document = json.loads(signature.read_text())
    statement = json.loads(base64.b64decode(document["dsseEnvelope"]["payload"]))
    statement["predicate"]["resources"].append({"algorithm": "sha256", "digest": "0" * 64, "name": "../x"})
    document["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    signature.write_text(json.dumps(document))
    code, found = verify(cli, signed, "--trusted-key", keys.public)
    # The forged envelope would fail its signature too; that the containment finding comes alone shows the
    # signature library was never given it.
    assert code == 1 and [f["id"] for f in found] == ["signature.path"]
    assert found[0]["details"]["path"] == "../x"


def test_a_certificate_signer_is_trusted_through_its_ca(cli: Cli, example: Path, tmp_path: Path) -> None:
    chain = certificate_chain(tmp_path / "pki")
    code, _, err = cli(
        "sign", example, "--key", chain.key, "--certificate", chain.certificate, "--certificate-chain", chain.ca
    )
    assert code == 0, err
    assert verify(cli, example, "--trusted-certificate", chain.ca) == (0, [])
    stranger = certificate_chain(tmp_path / "other", "stranger")
    code, found = verify(cli, example, "--trusted-certificate", stranger.ca)
    assert code == 1 and [f["id"] for f in found] == ["signature.untrusted"]


def test_the_packed_archive_of_a_signed_bundle_keeps_its_signature(
    cli: Cli, signed: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    (signed / "notes.txt").write_text("not part of the release: left out of the signature and of the archive")
    archive = tmp_path / "m.tar.gz"
    code, _, err = cli("pack", signed, "-o", archive)
    assert code == 0, err
    assert verify(cli, archive, "--trusted-key", keys.public) == (0, [])


def test_trust_options_without_require_signature_are_a_usage_error(cli: Cli, example: Path, keys: KeyFiles) -> None:
    code, _, err = cli("verify", example, "--trusted-key", keys.public)
    assert code == 2 and "--require-signature" in err
    code, _, err = cli("verify", example, "--require-signature")
    assert code == 2 and "--trusted-key" in err


def _repack(archive: Path, out: Path, change: Callable[[Path], Any]) -> Path:
    """The archive unpacked, changed and packed again, as someone between the publisher and the device would."""
    folder = out.parent / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    (top,) = folder.iterdir()
    change(top)
    with tarfile.open(out, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    return out


def test_pack_sign_ships_a_signed_archive_and_tampering_with_it_fails(
    cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path
) -> None:
    archive = tmp_path / "m.tar.gz"
    code, out, err = cli("pack", example, "-o", archive, "--sign", "--key", keys.private)
    assert code == 0 and "(signed: bundle.sig)" in out, err
    with tarfile.open(archive) as tar:
        assert "mobilenet-tiny-1.0.0/bundle.sig" in tar.getnames()
    assert verify(cli, archive, "--trusted-key", keys.public) == (0, [])

    def edit(top: Path) -> None:
        (top / "labels.txt").write_text("cat\n")

    tampered = _repack(archive, tmp_path / "tampered.tar.gz", edit)
    code, found = verify(cli, tampered, "--trusted-key", keys.public)
    assert code == 1 and [(f["id"], f["file"]) for f in found] == [("signature.file_changed", "labels.txt")]


def test_pack_sign_with_a_certificate_is_trusted_through_its_ca(cli: Cli, example: Path, tmp_path: Path) -> None:
    chain = certificate_chain(tmp_path / "pki")
    archive = tmp_path / "m.tar.gz"
    signer = ["--key", chain.key, "--certificate", chain.certificate, "--certificate-chain", chain.ca]
    code, _, err = cli("pack", example, "-o", archive, "--sign", *signer)
    assert code == 0, err
    assert verify(cli, archive, "--trusted-certificate", chain.ca) == (0, [])


def test_pack_signer_flags_are_checked_before_the_work(cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path) -> None:
    archive = tmp_path / "m.tar.gz"
    code, _, err = cli("pack", example, "-o", archive, "--key", keys.private)
    assert code == 2 and "--sign" in err
    code, _, err = cli("pack", example, "-o", archive, "--sign")
    assert code == 2 and "--key" in err
    code, _, err = cli("pack", example, "-o", archive, "--sign", "--key", tmp_path / "absent.pem")
    assert code == 2 and "absent.pem" in err
    assert not archive.exists() and not (example / "bundle.sig").exists()


def test_a_failing_bundle_is_neither_signed_nor_packed(cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path) -> None:
    (example / "labels.txt").write_text("cat\n")  # no longer the locked file: the bundle fails
    archive = tmp_path / "m.tar.gz"
    code, _, _ = cli("pack", example, "-o", archive, "--sign", "--key", keys.private)
    assert code == 1 and not archive.exists() and not (example / "bundle.sig").exists()
