"""`checker sign`: sign a bundle folder's release files with model-signing, into `bundle.sig` beside the manifest."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.bundle.layout import locate
from checker.bundle.opening import is_archive
from checker.bundle.paths import walk_files
from checker.errors import BundleError, Error, UsageError
from checker.signing.files import MAX_WALK, SIGNATURE, is_git_path, release_files

EXTRA = "pip install 'onnx-release-checker[sign]'"


class SignError(Error):
    """The bundle cannot be signed: a key that does not load, a file that cannot be read."""


@dataclass
class Signer:
    """One of model-signing's signers: an elliptic-curve key, a key with its certificate, or Sigstore."""

    key: Path | None = None
    certificate: Path | None = None
    chain: list[Path] = field(default_factory=list)
    sigstore: bool = False
    identity_token: str | None = None  # Sigstore: an OIDC token (in CI, the workflow's id-token)


@dataclass
class Signed:
    signature: Path
    files: list[str]


def model_signing() -> Any:
    """The model-signing package, or a usage error naming the extra that installs it."""
    try:
        import model_signing as found  # only signing and signature checks need it (and it is slow to import)
    except ImportError as exc:
        raise UsageError(f"signing needs the model-signing package ({exc}): {EXTRA}") from None
    return found


def left_out(root: Path, keep: set[str]) -> list[str]:
    """What a signature of the `keep` files leaves out by name: every other file of the folder, and a folder
    that holds none of them by its own name alone (model-signing checks each file against each name left
    out: a repository's objects named one by one would cost it hours). A folder of more than MAX_WALK such
    names cannot be signed: its check would not read them all."""
    holding = {rel.rsplit("/", depth)[0] for rel in keep for depth in range(1, rel.count("/") + 1)}
    folders: list[str] = []

    def whole(folder: str) -> bool:
        if folder in holding:
            return False
        folders.append(folder)
        return True

    walked = walk_files(root, MAX_WALK + 1, skip=whole)
    if len(walked) + len(folders) > MAX_WALK:
        raise SignError(f"{root}: more than {MAX_WALK} files and folders to sign or leave out: move some out")
    return sorted([rel for rel in walked if rel not in keep and not is_git_path(rel)] + folders)


def sign_bundle(path: Path, signer: Signer) -> Signed:
    if is_archive(path):
        raise UsageError(f"{path} is an archive; sign the bundle folder, then pack it")
    manifest_path = locate(path)
    if manifest_path is None:
        raise BundleError(f"{path}: no bundle.yaml, bundle.yml or bundle.json to sign")
    root = manifest_path.parent
    files = release_files(manifest_path)
    missing = [rel for rel in files if not (root / rel).is_file()]
    if missing:
        raise BundleError(f"{path}: cannot sign, named files are missing: {', '.join(missing[:5])}")
    # Everything else in the folder is left out by name: the signature then holds for the packed archive too.
    ignored = left_out(root, set(files))
    ms = model_signing()
    hashing = ms.hashing.Config().set_ignored_paths(paths=[*ignored, SIGNATURE], ignore_git_paths=True)
    config = _with_signer(ms.signing.Config().set_hashing_config(hashing), signer)
    try:
        config.sign(root, root / SIGNATURE)
    except (OSError, ValueError, TypeError) as exc:
        raise SignError(f"cannot sign {path}: {exc}") from None
    return Signed(root / SIGNATURE, files)


def _with_signer(config: Any, signer: Signer) -> Any:
    if signer.sigstore:
        # In a workflow with `id-token: write` the ambient credentials are the workflow's OIDC token.
        return config.use_sigstore_signer(
            identity_token=signer.identity_token, use_ambient_credentials=signer.identity_token is None
        )
    if signer.key is None:
        raise UsageError("sign needs --key KEY.pem (with --certificate for a certificate signer) or --sigstore")
    try:
        if signer.certificate is not None:
            return _certificate_signer(config, signer.key, signer.certificate, signer.chain)
        return config.use_elliptic_key_signer(private_key=signer.key)
    except (OSError, ValueError, TypeError) as exc:
        raise SignError(f"cannot load the signing key or certificate: {exc}") from None


def _certificate_signer(config: Any, key: Path, certificate: Path, chain: list[Path]) -> Any:
    """A certificate signer; without a chain, for a certificate issued straight by the root the verifier trusts.
    model-signing 1.1.1 parses the joined chain files as PEM and fails on none ("MalformedFraming",
    sigstore/model-transparency#613), so it is given the signing certificate to parse and then carries no
    chain above it, which is what the signature then holds."""
    if chain:
        return config.use_certificate_signer(private_key=key, signing_certificate=certificate, certificate_chain=chain)
    config = config.use_certificate_signer(
        private_key=key, signing_certificate=certificate, certificate_chain=[certificate]
    )
    made = getattr(config, "_signer", None)
    if made is not None and isinstance(getattr(made, "_trust_chain", None), list):
        made._trust_chain = []  # the certificate parsed above is the signing one: no chain is carried above it
    return config
