"""The manifest as a round-trip tree: edits keep the user's comments, key order and quoting."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from checker.errors import Error
from checker.manifest.load import dump_tree, parse_text, read_text
from checker.manifest.schema import SCHEMA_FILE, schema_text

DEFAULT_NAME = "bundle.yaml"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")  # release.name, as the schema has it
TODO = "TODO: "  # the mark of a placeholder; `grep TODO bundle.yaml` lists what is left to do


class ManifestEditError(Error):
    """The manifest cannot be read or written back."""


def read_tree(path: Path) -> Any:
    text, found = read_text(path)
    if text is not None:
        tree, found = parse_text(text, path.name)
        if tree is not None:
            return tree
    raise ManifestEditError(found[0].message if found else f"{path}: cannot be read")


def dump(tree: Any, suffix: str) -> str:
    """The manifest's text, written the way `checker lock` writes it (JSON for a .json manifest)."""
    return dump_tree(tree, suffix)


def write_tree(tree: Any, path: Path) -> None:
    write_text(path, dump(tree, path.suffix))


def write_text(path: Path, text: str) -> None:
    """Write through a temporary file, so an interrupted write never leaves half a manifest."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ManifestEditError(f"{path}: cannot be written ({exc.strerror or exc})") from exc


def schema_comment() -> str:
    """The comment that lets YAML editors complete and check the manifest: a relative path to the schema's copy
    beside it (`write_schema`), which resolves offline and with no published URL."""
    return f"yaml-language-server: $schema={SCHEMA_FILE}"


def write_schema(root: Path) -> None:
    """The manifest schema, beside the manifest, for `schema_comment` to name."""
    write_text(root / SCHEMA_FILE, schema_text("manifest"))


def block(pairs: Mapping[str, Any] | None = None) -> Any:
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap(pairs or {})


def flow_map(pairs: Mapping[str, Any]) -> Any:
    node = block(pairs)
    node.fa.set_flow_style()
    return node


def flow_seq(items: Iterable[Any]) -> Any:
    from ruamel.yaml.comments import CommentedSeq

    node = CommentedSeq(items)
    node.fa.set_flow_style()
    return node


def flowed(value: Any) -> Any:
    """Plain data with every mapping and list inside it in flow style: a proposed block, one line per key."""
    if isinstance(value, dict):
        return flow_map({k: flowed(v) for k, v in value.items()})
    if isinstance(value, list):
        return flow_seq([flowed(v) for v in value])
    return value


def block_seq(items: Iterable[Any] = ()) -> Any:
    from ruamel.yaml.comments import CommentedSeq

    node = CommentedSeq(items)
    node.fa.set_block_style()
    return node


def one_line(text: str) -> str:
    """Text made safe for a YAML comment: a name from a graph may hold line breaks."""
    return "".join(c if c.isprintable() else "?" for c in text)


def note(mapping: Any, key: str, *lines: str, indent: int = 0) -> None:
    """A comment after `key`'s (scalar or flow) value, continued on the lines below it at `indent`."""
    parts = [one_line(line) for line in lines]
    mapping.yaml_add_eol_comment("# " + f"\n{' ' * indent}# ".join(parts), key)


def drop_note(mapping: Any, key: str) -> None:
    """Remove the comment after `key` (a placeholder that has just been filled). A flow value read back from a
    file holds the same comment itself, so a value kept (and made a block) does not carry it on."""
    mapping.ca.items.pop(key, None)
    value = mapping.get(key)
    if hasattr(value, "ca"):
        value.ca.comment = None


def release_name(*candidates: str) -> str:
    """The first candidate made into a valid release name (lower case, no spaces), else 'model'."""
    for text in candidates:
        slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).lstrip("._-")[:128]
        if slug:
            return slug
    return "model"
