"""Loading a manifest: bounded YAML/JSON parsing that keeps line marks, then the version and the schema."""

from __future__ import annotations

import difflib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.bundle.paths import BundlePathError, regular_size, resolve_inside
from checker.findings import Finding
from checker.manifest.strings import unencodable_findings

MAX_MANIFEST_BYTES = 16 << 20  # a release with tens of thousands of cases; the node count bounds the work
MAX_NODES = 2_000_000  # the parsed tree's size: what an attacker could make us build
MAX_DEPTH = 64  # a manifest nests six levels; JSON and YAML parsers recurse per level
SUPPORTED_VERSIONS = (1,)
MANIFEST_NAMES = ("bundle.yaml", "bundle.yml", "bundle.json")


@dataclass
class Manifest:
    """A parsed manifest: plain data for the checks, and the parsed tree for line numbers."""

    data: dict[str, Any]
    file: str  # the manifest's file name, as findings name it
    tree: Any = None  # the ruamel.yaml tree, which carries line marks

    def line(self, *keys: str | int) -> int | None:
        """The 1-based line of the field at `keys`, or of its nearest existing parent."""
        node, line = self.tree, None
        for key in keys:
            mark = _mark_of(node, key)
            if mark is None:
                break
            line = mark
            node = node[key]
        return line


def _mark_of(node: Any, key: str | int) -> int | None:
    lc = getattr(node, "lc", None)
    if lc is None:
        return None
    try:
        if isinstance(key, int) and isinstance(node, list) and 0 <= key < len(node):
            return int(lc.item(key)[0]) + 1
        if isinstance(key, str) and isinstance(node, dict) and key in node:
            return int(lc.key(key)[0]) + 1
    except (KeyError, TypeError, AttributeError):
        return None
    return None


def to_plain(node: Any) -> Any:
    """ruamel's round-trip types -> dict/list/str/int/float/bool/None (dates stay as text)."""
    if isinstance(node, dict):
        return {str(k): to_plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [to_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return str(node)


def _refuse_costly(text: str, name: str) -> Finding | None:
    """Refuse, from the event stream, what makes a few bytes costly: anchors and aliases expand into a huge
    tree, and deep nesting makes ruamel.yaml's scanner quadratic (10000 '[' would take hours). A manifest
    needs neither."""
    from ruamel.yaml import YAML
    from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, NodeEvent

    depth = 0
    for count, event in enumerate(YAML(typ="rt").parse(text), start=1):
        line = event.start_mark.line + 1 if event.start_mark else None
        if isinstance(event, AliasEvent) or (isinstance(event, NodeEvent) and event.anchor):
            return F.error(F.MANIFEST_PARSE, "YAML anchors and aliases are not allowed", name, line)
        depth += isinstance(event, CollectionStartEvent) - isinstance(event, CollectionEndEvent)
        if depth > MAX_DEPTH:
            return F.error(F.MANIFEST_PARSE, f"nested more than {MAX_DEPTH} levels deep", name, line)
        if count > MAX_NODES:
            return F.error(F.MANIFEST_PARSE, f"more than {MAX_NODES} YAML nodes", name)
    return None


def parse_text(text: str, name: str) -> tuple[Any, list[Finding]]:
    """The parsed tree, or None with a `manifest.parse` finding naming the line."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        refused = _refuse_costly(text, name)
        if refused:
            return None, [refused]
        yaml = YAML(typ="rt")
        yaml.preserve_quotes = True  # `checker lock` writes the tree back as the user wrote it
        tree = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "not valid YAML"
        return None, [F.error(F.MANIFEST_PARSE, f"not valid YAML: {problem}", name, line)]
    except (YAMLError, ValueError, RecursionError) as exc:
        return None, [F.error(F.MANIFEST_PARSE, f"not valid YAML/JSON ({exc})", name)]
    if not isinstance(tree, dict):
        return None, [F.error(F.MANIFEST_PARSE, "the manifest must be a mapping of fields", name, 1)]
    return tree, []


def read_text(path: Path) -> tuple[str | None, list[Finding]]:
    name = path.name
    try:
        resolve_inside(path.parent, name)
    except BundlePathError:
        return None, [F.error(F.BUNDLE_PATH, f"{name} is a link to a file outside the bundle; it is not read", name)]
    try:
        size = regular_size(path)
        if size > MAX_MANIFEST_BYTES:
            return None, [F.error(F.MANIFEST_PARSE, f"{name} is {size} bytes; at most {MAX_MANIFEST_BYTES}", name)]
        return path.read_bytes().decode("utf-8-sig"), []
    except UnicodeDecodeError as exc:
        return None, [F.error(F.MANIFEST_PARSE, f"{name} is not UTF-8 text ({exc.reason})", name)]
    except OSError as exc:
        return None, [F.error(F.MANIFEST_PARSE, f"{name} cannot be read ({exc.strerror})", name)]


def load_manifest(path: Path) -> tuple[Manifest | None, list[Finding]]:
    """Parse, check the version, validate against the schema.

    The manifest comes back whenever it parses and its version is supported, even with schema findings:
    completeness can still be judged from it, defensively; the later checks need a valid one.
    """
    text, found = read_text(path)
    if text is None:
        return None, found
    tree, found = parse_text(text, path.name)
    if tree is None:
        return None, found
    manifest = Manifest(data=to_plain(tree), file=path.name, tree=tree)
    unencodable = unencodable_findings(manifest)
    if unencodable:
        return None, unencodable  # no later stage may see a string that cannot be written out
    version = check_version(manifest)
    if version:
        return None, version
    return manifest, schema_findings(manifest)


def check_version(manifest: Manifest) -> list[Finding]:
    version = manifest.data.get("manifest_version")
    if version is None or isinstance(version, bool) or version in SUPPORTED_VERSIONS:
        return []  # absent or mistyped: the schema says so
    line = manifest.line("manifest_version")
    if isinstance(version, int) and version > max(SUPPORTED_VERSIONS):
        msg = (
            f"manifest_version {version} is newer than this checker reads (up to {max(SUPPORTED_VERSIONS)}); "
            "upgrade the checker"
        )
    elif isinstance(version, str) and version.strip() in {str(v) for v in SUPPORTED_VERSIONS}:
        msg = f"manifest_version must be the integer {version.strip()}, unquoted"
    else:
        msg = f"manifest_version {version!r} is not supported; use {max(SUPPORTED_VERSIONS)}"
    return [F.error(F.MANIFEST_VERSION, msg, manifest.file, line)]


def schema_findings(manifest: Manifest) -> list[Finding]:
    """Every schema violation, each at the line of the field at fault."""
    from checker.manifest.schema import validator

    out = []
    for err in sorted(validator("manifest").iter_errors(manifest.data), key=lambda e: list(e.absolute_path)):
        out.extend(_describe(manifest, err))
    return out


def field_path(keys: tuple[Any, ...]) -> str:
    """Keys as a reader writes them: comparison.rules[1].check."""
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "(top level)"


def _message(err: Any) -> str:
    if err.validator == "not" and err.instance == "baseline":
        return "'baseline' names the baseline graph; give the variant another name"
    return str(err.message)


def _describe(manifest: Manifest, err: Any) -> list[Finding]:
    keys = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        return [_unknown_key(manifest, keys, key, err.schema) for key in _extra_keys(err)]
    if err.validator in ("oneOf", "anyOf") and err.context:
        from jsonschema.exceptions import best_match

        err = best_match(err.context)
        keys = keys + tuple(err.relative_path)
    line = manifest.line(*keys)
    return [F.error(F.MANIFEST_SCHEMA, f"{field_path(keys)}: {_message(err)}", manifest.file, line)]


def _extra_keys(err: Any) -> list[str]:
    allowed = set(err.schema.get("properties", {}))
    return sorted(str(k) for k in err.instance if k not in allowed)


def _unknown_key(manifest: Manifest, keys: tuple[Any, ...], key: str, schema: dict[str, Any]) -> Finding:
    line = manifest.line(*keys, key)
    close = difflib.get_close_matches(key, list(schema.get("properties", {})), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    msg = f"{field_path((*keys, key))}: unknown field '{key}'{hint}"
    return F.error(F.MANIFEST_SCHEMA, msg, manifest.file, line)


def find_manifest(folder: Path) -> Path | None:
    for name in MANIFEST_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def dump_tree(tree: Any, suffix: str) -> str:
    """The manifest's text from its round-trip tree: comments, key order and quoting kept."""
    if suffix == ".json":
        return json.dumps(to_plain(tree), indent=2) + "\n"
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.width = 4096  # never re-wrap the user's lines
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = True
    out = io.StringIO()
    yaml.dump(tree, out)
    return out.getvalue()
