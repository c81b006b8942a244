"""`checker lock`: write every named file's sha256 (into `bundle.sha256`, and beside the graph, label and tokenizer
paths of the manifest), each manifest field's (into `bundle.sha256`) and the bundle digest into the manifest,
keeping its comments."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.bundle.layout import find_manifest
from checker.bundle.paths import BundlePathError, resolve_inside
from checker.checks.files import own_file_problem, own_files
from checker.errors import BundleError
from checker.manifest.canonical import release_lines
from checker.manifest.load import Manifest, dump_tree, load_manifest, to_plain
from checker.manifest.named import Named, named_files
from checker.readers.digest import bundle_digest, sha256_files
from checker.readers.digestlist import DIGEST_LIST, list_text


@dataclass
class LockResult:
    ok: bool
    messages: list[str] = field(default_factory=list)
    digest: str | None = None


def _manifest_path(path: Path) -> Path:
    found = find_manifest(path) if path.is_dir() else path
    if found is None or not found.is_file():
        raise BundleError(f"{path}: no bundle.yaml, bundle.yml or bundle.json to lock")
    return found


def lock(path: Path) -> LockResult:
    manifest_path = _manifest_path(path)
    manifest, found = load_manifest(manifest_path, round_trip=True)
    if manifest is None or found:
        where = [f"{manifest_path}" + (f":{f.line}" if f.line else "") for f in found]  # an editor's file:line
        return LockResult(False, [f"{w}: {f.message}" for w, f in zip(where, found)] or ["the manifest cannot be read"])
    root = manifest_path.parent
    named = named_files(manifest.data, root)
    files, problems = _resolve(manifest, named, root)
    if problems:
        return LockResult(False, problems)
    hashed = sha256_files(files.values())  # one entry per real file: two names may share one
    digests = {rel: hashed[path] for rel, path in files.items()}
    _write_digests(manifest.tree, named, digests)
    # The manifest's fields as they stand once the files' sha256 are in (release.digest is left out of them).
    lines = release_lines(digests, to_plain(manifest.tree))
    digest = bundle_digest(lines)
    _set_after(manifest.tree["release"], "version", "digest", digest)
    # Every file's and field's digest, case tensors and raw inputs included, in a list beside the manifest:
    # verify names what changed, and a manifest of thousands of cases stays short.
    (root / DIGEST_LIST).write_text(list_text(lines), encoding="utf-8")
    manifest_path.write_text(dump_tree(manifest.tree, manifest_path.suffix), encoding="utf-8")
    counts = f"{len(digests)} files and {len(lines) - len(digests)} manifest fields"
    return LockResult(True, [f"locked {counts} (digests in {DIGEST_LIST}); bundle digest {digest}"], digest)


def _resolve(manifest: Manifest, named: list[Named], root: Path) -> tuple[dict[str, Path], list[str]]:
    files: dict[str, Path] = {}
    problems = []
    own = own_files(root, manifest.file)
    for entry in named:
        try:
            target = resolve_inside(root, entry.rel)
            refused = own_file_problem(entry.rel, target, own)
            if refused is not None:
                raise BundlePathError(refused)
        except BundlePathError as exc:
            problems.append(f"{manifest.file}:{manifest.line(*entry.keys)}: {exc}")
            continue
        if not target.is_file():
            problems.append(f"{manifest.file}:{manifest.line(*entry.keys)}: '{entry.rel}' does not exist")
            continue
        files[entry.rel] = target
    return files, problems


def _set_after(mapping: Any, after: str, key: str, value: str) -> None:
    """Put `key` just after `after` in a round-trip mapping, or update it where it stands."""
    if key in mapping:
        mapping[key] = value
        return
    keys = list(mapping)
    position = keys.index(after) + 1 if after in keys else len(keys)
    mapping.insert(position, key, value)


def _write_digests(tree: Any, named: list[Named], digests: dict[str, str]) -> None:
    """Each digest beside the path that names its file, where the manifest has a key for it."""
    for entry in named:
        if entry.digest_key is not None and entry.rel in digests:
            _set_after(entry.holder(tree), str(entry.keys[-1]), entry.digest_key, digests[entry.rel])
