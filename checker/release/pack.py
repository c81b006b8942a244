"""`checker pack`: one deterministic .tar.gz of a verified bundle, holding the manifest and exactly what it names.

Deterministic means the same bundle packs to the same bytes: members sorted, times fixed, owners and modes
normalised, and no time or file name in the gzip header either.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from checker import findings as F
from checker.bundle.layout import locate
from checker.bundle.opening import is_archive
from checker.bundle.paths import BundlePathError, resolve_inside
from checker.checks.signature import SignatureProblem, read_statement, signature_changes
from checker.context import Options
from checker.errors import BundleError, Error, UsageError
from checker.manifest.canonical import release_lines
from checker.manifest.load import load_manifest
from checker.manifest.model.build import build
from checker.manifest.model.release import Release
from checker.manifest.model.root import Spec
from checker.manifest.named import named_files
from checker.readers.digest import CHUNK, bundle_digest
from checker.readers.digestlist import DIGEST_LIST
from checker.reports.model import BundleReport
from checker.signing.files import SIGNATURE
from checker.signing.sign import Signer, sign_bundle
from checker.verify import verify_bundle

FILE_MODE = 0o644
COMPRESS_LEVEL = 6  # weights hardly compress; a higher level costs time and saves next to nothing
SUFFIXES = (".tar.gz", ".tgz")


class PackError(Error):
    """The archive cannot be written."""


@dataclass
class PackResult:
    report: BundleReport
    archive: Path | None = None  # None when the bundle failed verification and nothing was written
    digest: str | None = None
    files: list[str] = field(default_factory=list)  # bundle-relative members, manifest included


def fixed_mtime() -> int:
    """The member time: SOURCE_DATE_EPOCH when a reproducible build sets it, else 0."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "")
    return int(value) if value.isdigit() else 0


def release_stem(release: Release) -> str:
    """NAME-VERSION, safe as a file and folder name."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", f"{release.name}-{release.version}")


def pack(
    path: Path,
    out: Path | None = None,
    strict: bool = False,
    signer: Signer | None = None,
    device_outputs: list[Path] | None = None,
) -> PackResult:
    """Verify the bundle at `path` (a folder or its manifest) and, when it passes, write its archive; with a
    signer, the verified folder is signed first (as `checker sign` signs it) and the archive carries bundle.sig.
    `device_outputs` are the folders of the devices the manifest declares, judged as verify judges them."""
    if is_archive(path):
        raise UsageError(f"{path} is an archive already; pack the bundle folder it was made from")
    manifest_path = locate(path)
    if manifest_path is None:
        raise BundleError(f"{path}: no bundle.yaml, bundle.yml or bundle.json to pack")
    if out is not None and not out.name.endswith(SUFFIXES):
        raise UsageError(f"-o {out}: the archive's name must end in .tar.gz or .tgz")
    report = verify_bundle(path, Options(strict=strict, device_outputs=list(device_outputs or [])))
    if signer is not None:  # the bundle is signed again below: a signature that no longer matches is replaced
        report.findings = [f for f in report.findings if f.id != F.SIGNATURE_STALE]
    if report.status(strict) == "fail" or report.not_run:
        return PackResult(report)  # a release ships only once every one of its checks has run
    manifest, _ = load_manifest(manifest_path)
    assert manifest is not None  # it passed verification
    root = manifest_path.parent
    if signer is not None:
        sign_bundle(manifest_path, signer)  # only a release that passed is signed
    stem = release_stem(build(Spec, manifest.data).release)  # it passed verification, so the schema
    named = sorted({entry.rel for entry in named_files(manifest.data, root)})
    target = out if out is not None else Path(f"{stem}.tar.gz")
    beside = [manifest_path.name] + [name for name in (DIGEST_LIST, SIGNATURE) if (root / name).is_file()]
    digests = _write(target, root, stem, sorted([*named, *beside]))
    if SIGNATURE in beside and signer is None:
        _refuse_stale_signature(target, root, digests)
    for name in beside:
        digests.pop(name)
    digest = bundle_digest(release_lines(digests, manifest.data))
    if digest != report.digest:
        target.unlink(missing_ok=True)
        raise PackError(
            f"a named file changed while {path} was packed (digest {digest}, verified {report.digest}); "
            "nothing was written"
        )
    return PackResult(report, target, digest, sorted([*named, *beside]))


def _refuse_stale_signature(target: Path, root: Path, members: dict[str, str]) -> None:
    """A bundle.sig that does not sign exactly the files packed would make every device that requires the
    signature reject the archive: it is not written."""
    try:
        signed = read_statement(root)
    except SignatureProblem as problem:
        target.unlink(missing_ok=True)
        raise PackError(f"{SIGNATURE} cannot be packed: {problem.finding.message}; nothing was written") from None
    release = {rel for rel in members if rel != SIGNATURE}
    changes = signature_changes(signed, {rel: d for rel, d in members.items() if rel in release}, release)
    if changes:
        target.unlink(missing_ok=True)
        raise PackError(
            f"{SIGNATURE} no longer matches the bundle ({'; '.join(changes)}), and a device with --require-signature "
            "would reject the archive: sign it again (`checker sign`, or `checker pack --sign`) or remove "
            f"{SIGNATURE}; nothing was written"
        )


def _write(target: Path, root: Path, stem: str, members: list[str]) -> dict[str, str]:
    """Write the archive through a temporary file; returns the sha256 of each member as it was read."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with (
            temporary.open("wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=COMPRESS_LEVEL) as zipped,
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            digests = {rel: _add(tar, root, rel, f"{stem}/{rel}") for rel in members}
        temporary.replace(target)
    except (OSError, BundlePathError) as exc:
        temporary.unlink(missing_ok=True)
        raise PackError(f"cannot write {target}: {exc}") from exc
    return digests


def _add(tar: tarfile.TarFile, root: Path, rel: str, arcname: str) -> str:
    path = resolve_inside(root, rel)  # a link inside the bundle is stored as the file it points to
    with path.open("rb") as handle:
        info = tarfile.TarInfo(arcname)
        info.size = os.fstat(handle.fileno()).st_size
        info.mtime, info.mode, info.type = fixed_mtime(), FILE_MODE, tarfile.REGTYPE
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        hashing = _Hashing(handle)
        tar.addfile(info, hashing)
    return hashing.hexdigest()


class _Hashing:
    """A reader that hashes what tarfile copies, so the archive's digest is that of the bytes it holds."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.sha = hashlib.sha256()

    def read(self, size: int = CHUNK) -> bytes:
        data = self.handle.read(size)
        self.sha.update(data)
        return data

    def hexdigest(self) -> str:
        return self.sha.hexdigest()
