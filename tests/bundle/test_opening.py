"""Bundles as archives: extracted into a temporary folder, refusing escapes, links, devices and bombs."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from checker.context import Options
from checker.verify import verify_bundle


def tar_of(folder: Path, dest: Path, prefix: str = "bundle") -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(folder, arcname=prefix)
    return dest


def zip_of(folder: Path, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            zf.write(path, path.relative_to(folder).as_posix())
    return dest


def test_tar_gz_and_zip_give_the_folder_verdict(example: Path, tmp_path: Path) -> None:
    folder = verify_bundle(example, Options())
    for archive in (tar_of(example, tmp_path / "b.tar.gz"), zip_of(example, tmp_path / "b.zip")):
        report = verify_bundle(archive, Options())
        assert report.digest == folder.digest
        assert [f.id for f in report.findings] == [f.id for f in folder.findings]
        assert report.path == str(archive)


def _evil_tar(dest: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        tar.addfile(member, io.BytesIO(data) if data else None)
    return dest


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: tarfile.TarInfo("../escape.txt"), "outside the bundle"),
        (lambda: tarfile.TarInfo("/abs.txt"), "outside the bundle"),
        (lambda: _link("bundle.yaml", "/etc/passwd", tarfile.SYMTYPE), "link or a device"),
        (lambda: _link("data", "/etc/passwd", tarfile.LNKTYPE), "link or a device"),
        (lambda: _link("dev", "", tarfile.CHRTYPE), "link or a device"),
    ],
)
def test_tar_members_refused(tmp_path: Path, make: object, words: str) -> None:
    member = make()  # type: ignore[operator]
    data = b"x" if member.isfile() else b""
    member.size = len(data)
    archive = _evil_tar(tmp_path / "evil.tar.gz", member, data)
    report = verify_bundle(archive, Options())
    assert [f.id for f in report.findings] == ["bundle.path"]
    assert words in report.findings[0].message
    assert not (tmp_path / "escape.txt").exists()


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_zip_bomb_refused(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bundle.yaml", b"\0" * (64 << 20))
    report = verify_bundle(archive, Options())
    assert [f.id for f in report.findings] == ["bundle.limit"]
    assert "decompression bomb" in report.findings[0].message


def test_too_many_members_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import checker.bundle.archives

    monkeypatch.setattr(checker.bundle.archives, "MAX_ARCHIVE_MEMBERS", 5)
    archive = tmp_path / "many.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for i in range(6):
            info = tarfile.TarInfo(f"f{i}.txt")
            tar.addfile(info, io.BytesIO(b""))
    report = verify_bundle(archive, Options())
    assert [f.id for f in report.findings] == ["bundle.limit"]
    assert "more than 5 members" in report.findings[0].message


def test_tar_gz_bomb_refused(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("bundle.yaml")
        info.size = 128 << 20
        tar.addfile(info, io.BytesIO(b"\0" * info.size))
    report = verify_bundle(archive, Options())
    assert [f.id for f in report.findings] == ["bundle.limit"]
    assert "decompression bomb" in report.findings[0].message


def test_zip_symlink_member_refused(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("bundle.yaml")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    report = verify_bundle(archive, Options())
    assert "link or a device" in report.findings[0].message


def test_archive_without_manifest(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "readme.txt").write_text("no manifest")
    report = verify_bundle(tar_of(folder, tmp_path / "x.tar.gz"), Options())
    assert [f.id for f in report.findings] == ["bundle.file_missing"]
    assert "no manifest" in report.findings[0].message
