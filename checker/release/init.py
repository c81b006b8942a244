"""`checker init`: start a bundle from a graph file.

The graph goes into the bundle folder (copied there, with its external data, when it lies elsewhere) and a
manifest is written beside it. A manifest that only holds cases saved by an export script (`save_case`) is taken
over: its release and comparison sections are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.bundle.layout import locate
from checker.errors import Error, UsageError
from checker.manifest.load import Manifest, parse_text, schema_findings, to_plain
from checker.release.draft import Source, draft_manifest
from checker.release.graphfacts import GraphFacts, read_graph
from checker.release.placing import place
from checker.release.tree import (
    DEFAULT_NAME,
    NAME_PATTERN,
    block,
    dump,
    note,
    read_tree,
    release_name,
    write_schema,
    write_text,
)

# The sections an export script's early manifest holds; any other means a bundle is already described.
EARLY_SECTIONS = {"manifest_version", "release", "comparison"}
DEFAULT_VERSION = "0.1.0"


class InitError(Error):
    """The bundle cannot be started from this graph here."""


@dataclass
class InitResult:
    manifest: Path
    placeholders: list[str]
    guesses: list[str]
    copied: list[str] = field(default_factory=list)  # bundle-relative files copied into the folder


def init_bundle(
    model: Path,
    out: Path | None = None,
    *,
    name: str | None = None,
    version: str | None = None,
    force: bool = False,
    device: str | None = None,
) -> InitResult:
    if not model.is_file():
        raise UsageError(f"{model}: no such model file")
    if name is not None and not NAME_PATTERN.match(name):
        raise UsageError(f"--name '{name}': use lower-case letters, digits, '.', '_' and '-'")
    root = out if out is not None else model.parent
    if root.exists() and not root.is_dir():
        raise UsageError(f"--out {root}: not a folder")
    facts = read_graph(model)
    root.mkdir(parents=True, exist_ok=True)
    existing, tree = _existing(root, force)
    placed = place(model, root, facts.external, force)
    source, copied = Source(placed.graph, placed.external, placed.digests), placed.copied
    release = _release(tree, root, model, name, version, facts)
    carried = tree.get("comparison") if tree is not None and isinstance(tree.get("comparison"), dict) else None
    draft = draft_manifest(facts, source, release, carried, device)
    target = existing or root / DEFAULT_NAME
    write_text(target, _checked_text(draft.tree, target))
    write_schema(root)
    return InitResult(target, draft.placeholders, draft.guesses, copied)


def _existing(root: Path, force: bool) -> tuple[Path | None, Any]:
    path = locate(root)
    if path is None:
        return None, None
    tree = read_tree(path)
    extra = sorted(str(k) for k in tree if k not in EARLY_SECTIONS)
    if extra and not force:
        raise InitError(
            f"{path} already describes a bundle ({', '.join(extra)}); pass --force to write a new "
            "manifest from the graph (its release and comparison sections are kept)"
        )
    return path, tree


def _release(tree: Any, root: Path, model: Path, name: str | None, version: str | None, facts: GraphFacts) -> Any:
    """The kept release section, or a new one; --name and --release-version win over both."""
    if version is None and facts.model_version > 0:
        version = str(facts.model_version)
    description = facts.description
    kept = tree.get("release") if tree is not None else None
    release = kept if isinstance(kept, dict) else block()
    if name or "name" not in release:
        release["name"] = name or release_name(root.resolve().name, model.stem)
    if version or "version" not in release:
        release["version"] = version or DEFAULT_VERSION
        if not version:
            note(release, "version", "the release's version: set it")
    if description and "description" not in release:
        release["description"] = description[:4096]
    return release


def _checked_text(tree: Any, target: Path) -> str:
    """The manifest's text, after proving it reads back as written and matches the schema."""
    text = dump(tree, target.suffix)
    parsed, problems = parse_text(text, target.name)
    if parsed is None or to_plain(parsed) != to_plain(tree):
        raise InitError(
            "a name in the graph cannot be written faithfully into the manifest"
            + (f" ({problems[0].message})" if problems else "")
        )
    invalid = schema_findings(Manifest(to_plain(parsed), target.name, parsed))
    if invalid:
        raise InitError(
            "the manifest written from the graph does not match the schema: "
            + "; ".join(f.message for f in invalid[:3])
        )
    return text
