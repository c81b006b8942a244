"""The signature stage of `checker verify --require-signature`: `bundle.sig` verified against the trusted key,
certificate chain or Sigstore identity, and every file compared with what was signed.

The signed statement is read and every name in it checked to stay inside the bundle before model-signing reads
anything: a name such as `../x` is refused by the checker itself (`signature.path`), and the library never sees
the signature.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.bundle.paths import BundlePathError, check_relative, regular_size, resolve_inside, walk_files
from checker.context import Context, Trust
from checker.errors import UsageError
from checker.findings import Finding
from checker.readers.digest import sha256_files
from checker.readers.digestlist import DIGEST_LIST
from checker.signing.files import MAX_WALK, SIGNATURE, is_git_path

MAX_SIGNATURE_BYTES = 64 << 20


@dataclass
class Signed:
    """What the signature's statement says: file -> sha256, the paths it left out, its hash algorithm."""

    files: dict[str, str]
    ignored: list[str]
    algorithm: str


class SignatureProblem(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def signature_stage(ctx: Context) -> Iterator[Finding]:
    trust = ctx.options.trust
    if trust is None:
        return
    try:
        signed = read_statement(ctx.root)
        matched = _verify_signature(ctx.root, trust)
    except SignatureProblem as problem:
        yield problem.finding
        return
    # Where model-signing found the files differ, each is read again rather than taken as this run hashed it
    # before (a verdict store's look-up): one changed since then is named, and judged as it is now.
    found = list(compare_files(ctx.root, signed, ctx.hashed, fresh=not matched))
    yield from found
    if not matched and not found:
        msg = f"model-signing finds the folder's files differ from {SIGNATURE}, though none the checker compares does"
        yield F.error(F.SIGNATURE_UNTRUSTED, msg, SIGNATURE)


def _error(fid: str, message: str, **details: Any) -> SignatureProblem:
    return SignatureProblem(F.error(fid, message, SIGNATURE, **details))


def read_statement(root: Path) -> Signed:
    """The statement inside `bundle.sig`, every name in it checked to stay inside the bundle."""
    path = root / SIGNATURE
    if not path.exists() and not path.is_symlink():
        raise _error(F.SIGNATURE_MISSING, f"the bundle is not signed: there is no {SIGNATURE} (run `checker sign`)")
    try:
        resolve_inside(root, SIGNATURE)
        if path.is_symlink():
            raise OSError("a link; the signature must be a plain file")
        size = regular_size(path)
        if size > MAX_SIGNATURE_BYTES:
            raise OSError(f"{size} bytes; at most {MAX_SIGNATURE_BYTES}")
        envelope = json.loads(path.read_bytes())["dsseEnvelope"]
        statement = json.loads(base64.b64decode(envelope["payload"], validate=True))
        predicate = statement["predicate"]
        resources = {str(r["name"]): str(r["digest"]) for r in predicate["resources"]}
        serialization = predicate["serialization"]
        ignored = [str(p) for p in serialization.get("ignore_paths") or []]
        algorithm = str(serialization.get("hash_type", "sha256"))
    except (OSError, BundlePathError, ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise _error(
            F.SIGNATURE_UNTRUSTED, f"{SIGNATURE} cannot be read as a model-signing signature ({exc})"
        ) from None
    for name in [*resources, *ignored]:
        try:
            check_relative(name)
            resolve_inside(root, name)
        except BundlePathError as exc:
            msg = f"{SIGNATURE} names '{name}', which is not a path inside the bundle ({exc}); nothing was read"
            raise _error(F.SIGNATURE_PATH, msg, path=name) from None
    return Signed(resources, ignored, algorithm)


def _verify_signature(root: Path, trust: Trust) -> bool:
    """The signature checked against the trusted signer; whether the folder's files match it. model-signing
    also hashes the folder: a mismatch of files alone is left to `compare_files`, which names each file."""
    from checker.signing.sign import model_signing  # model-signing loads only when a bundle's signature is checked

    try:
        config = _verifier(model_signing().verifying.Config(), trust)
    except UsageError as exc:
        raise _error(F.SIGNATURE_UNTRUSTED, str(exc)) from None
    try:
        config.verify(root, root / SIGNATURE)
    except ValueError as exc:
        if str(exc).startswith("Signature mismatch"):
            return False  # signed by the trusted signer; the files differ
        raise _error(F.SIGNATURE_UNTRUSTED, f"{SIGNATURE} is not signed by {trust.whom()}: {exc}") from None
    except Exception as exc:  # the library's and cryptography's own errors: any of them means not trusted
        raise _error(F.SIGNATURE_UNTRUSTED, f"{SIGNATURE} is not signed by {trust.whom()}: {exc}") from None
    return True


def _verifier(config: Any, trust: Trust) -> Any:
    if trust.key is not None:
        return config.use_elliptic_key_verifier(public_key=trust.key)
    if trust.certificates:
        return config.use_certificate_verifier(certificate_chain=trust.certificates)
    if trust.identity and trust.issuer:
        return config.use_sigstore_verifier(identity=trust.identity, oidc_issuer=trust.issuer)
    raise UsageError("--require-signature needs --trusted-key, --trusted-certificate or --sigstore-identity")


def compare_files(root: Path, signed: Signed, hashed: dict[str, str], *, fresh: bool = False) -> Iterator[Finding]:
    """Each file added, removed or changed since signing, by name. `hashed`: the files this verification has
    read for their digests (bundle-relative path -> sha256), used as read, and added to; with `fresh`, every
    file is read again and its digest put there in place of the one read before. A folder the signature leaves
    out is not walked into; past MAX_WALK files the comparison is refused, not cut short."""
    left_out = set(signed.ignored) | {SIGNATURE}
    walked = walk_files(root, MAX_WALK + 1, skip=left_out.__contains__)
    if len(walked) > MAX_WALK:
        msg = f"the folder holds more than {MAX_WALK} files that {SIGNATURE} does not leave out: none was compared"
        yield F.error(F.SIGNATURE_UNTRUSTED, msg, SIGNATURE)
        return
    present = [rel for rel in walked if rel not in left_out and not is_git_path(rel)]
    if signed.algorithm != "sha256":
        yield F.error(F.SIGNATURE_UNTRUSTED, f"{SIGNATURE} hashes with {signed.algorithm}; the checker reads sha256")
        return
    unread = [rel for rel in present if fresh or rel not in hashed]
    hashed.update(zip(unread, sha256_files(root / rel for rel in unread).values()))
    actual = {rel: hashed[rel] for rel in present}
    for rel in sorted(set(signed.files) | set(actual)):
        if rel not in actual:
            yield F.error(F.SIGNATURE_FILE_REMOVED, f"'{rel}' was signed but is not in the bundle", rel, path=rel)
        elif rel not in signed.files:
            yield F.error(F.SIGNATURE_FILE_ADDED, f"'{rel}' was added since the bundle was signed", rel, path=rel)
        elif actual[rel] != signed.files[rel]:
            msg = f"'{rel}' changed since the bundle was signed: sha256 {actual[rel]}, signed {signed.files[rel]}"
            yield F.error(F.SIGNATURE_FILE_CHANGED, msg, rel, path=rel)


def stale_signature_stage(ctx: Context) -> Iterator[Finding]:
    """Without --require-signature, a `bundle.sig` that no longer matches the release files (edited and locked
    again since signing) is a warning: every device that requires the signature would reject the release."""
    if ctx.options.trust is not None or not (ctx.root / SIGNATURE).exists():
        return  # the signature stage judges a signature that is required
    try:
        signed = read_statement(ctx.root)
    except SignatureProblem as problem:
        msg = f"{SIGNATURE} is no signature a device can check: {problem.finding.message}"
        yield F.warning(F.SIGNATURE_STALE, msg, SIGNATURE)
        return
    release = {ctx.manifest.file, *ctx.digests, *ctx.unusable} | (
        {DIGEST_LIST} if (ctx.root / DIGEST_LIST).is_file() else set()
    )
    unnamed = [rel for rel in (ctx.manifest.file, DIGEST_LIST) if rel in release]
    now = {**ctx.digests, **_hashed(ctx.root, unnamed)}
    changes = signature_changes(signed, now, release)
    if changes:
        msg = (
            f"{SIGNATURE} no longer matches the bundle ({'; '.join(changes)}): a device with --require-signature "
            "rejects it"
        )
        yield F.warning(F.SIGNATURE_STALE, msg, SIGNATURE)


def signature_changes(signed: Signed, now: dict[str, str], release: set[str]) -> list[str]:
    """What differs between the signed files and the release files as they are now (`now`: path -> sha256 of
    those that can be read), in words: 'changed: bundle.yaml, bundle.sha256'."""
    changed = sorted(r for r in release if r in signed.files and r in now and now[r] != signed.files[r])
    added = sorted(r for r in release if r not in signed.files)
    removed = sorted(r for r in signed.files if r not in release or r not in now)
    parts = [f"changed: {_few(changed)}"] if changed else []
    parts += [f"not signed: {_few(added)}"] if added else []
    parts += [f"signed but gone: {_few(removed)}"] if removed else []
    return parts


def _hashed(root: Path, rels: list[str]) -> dict[str, str]:
    try:
        paths = {rel: resolve_inside(root, rel) for rel in rels}
        found = sha256_files(paths.values())
    except (OSError, BundlePathError):
        return {}
    return {rel: found[path] for rel, path in paths.items()}


def _few(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
