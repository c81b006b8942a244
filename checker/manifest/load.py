"""Loading a manifest: bounded YAML/JSON parsing that keeps line marks, then the version and the schema."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.bundle.paths import BundlePathError, regular_size, resolve_inside
from checker.findings import Finding
from checker.manifest.schema import fast_validator
from checker.manifest.schemaerrors import schema_errors
from checker.manifest.strings import unencodable_fields
from checker.manifest.yamltree import MAX_DEPTH, parse_marked, plain_data
from checker.manifest.yamltree import parse_text as parse_text  # the round-trip reader `checker lock` edits with
from checker.manifest.yamltree import to_plain as to_plain

MAX_MANIFEST_BYTES = 16 << 20  # a release with tens of thousands of cases; the node count bounds the work
SUPPORTED_VERSIONS = (1,)


@dataclass
class Manifest:
    """A parsed manifest: plain data for the checks, and the parsed tree for line numbers."""

    data: dict[str, Any]
    file: str  # the manifest's file name, as findings name it
    tree: Any = None  # the ruamel.yaml tree, which carries line marks
    text_sha256: str | None = None  # the text parsed (text_digest): a verdict store knows the manifest by it

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
        return path.read_bytes().decode("utf-8").removeprefix("\ufeff"), []  # utf-8-sig's codec is Python
    except UnicodeDecodeError as exc:
        return None, [_not_utf8(name, exc)]
    except OSError as exc:
        return None, [F.error(F.MANIFEST_PARSE, f"{name} cannot be read ({exc.strerror})", name)]


def text_digest(text: str) -> str:
    """sha256 of a manifest's text as read (UTF-8, without a byte-order mark): the same text parses to the same
    data, so a verdict judged on it holds for it without parsing it again."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _not_utf8(name: str, exc: UnicodeDecodeError) -> Finding:
    """Where the first byte that is not UTF-8 sits, by line and column, so an editor can go to it."""
    before = exc.object[: exc.start]
    line = before.count(b"\n") + 1
    column = exc.start - (before.rfind(b"\n") + 1) + 1
    byte = exc.object[exc.start]
    msg = f"{name} is not UTF-8 text: byte 0x{byte:02x} at line {line}, column {column} ({exc.reason})"
    return F.error(F.MANIFEST_PARSE, msg, name, line)


def json_syntax(text: str, name: str) -> list[Finding]:
    """A `.json` manifest is JSON, read strictly (no trailing comma, no comment, no single quotes): one
    finding at the line and column of the first error. Line marks then come from the YAML reader, which
    reads valid JSON to the same data."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        return [F.error(F.MANIFEST_PARSE, msg, name, exc.lineno)]
    except RecursionError:
        return [F.error(F.MANIFEST_PARSE, f"nested more than {MAX_DEPTH} levels deep", name)]
    return []


def load_manifest(path: Path, round_trip: bool = False) -> tuple[Manifest | None, list[Finding]]:
    """Parse, check the version, validate against the schema.

    The manifest comes back whenever it parses and its version is supported, even with schema findings:
    completeness can still be judged from it, defensively; the later checks need a valid one. `round_trip`
    gives ruamel.yaml's tree, which keeps comments and quoting for writing the manifest back.
    """
    text, found = read_text(path)
    if text is None:
        return None, found
    if path.suffix.lower() == ".json" and (found := json_syntax(text, path.name)):
        return None, found
    tree, found = (parse_text if round_trip else parse_marked)(text, path.name)
    if tree is None:
        return None, found
    manifest = Manifest(data=plain_data(tree), file=path.name, tree=tree, text_sha256=text_digest(text))
    unencodable = _unencodable(manifest, text)
    if unencodable:
        return None, unencodable  # no later stage may see a string that cannot be written out
    version = check_version(manifest)
    if version:
        return None, version
    return manifest, schema_findings(manifest)


def _unencodable(manifest: Manifest, text: str) -> list[Finding]:
    """A `manifest.schema` error for each field whose key or text is not valid Unicode."""
    out = []
    for keys in unencodable_fields(manifest.data, text):
        msg = (
            f"{field_path(keys)}: holds a lone surrogate (a '\\ud800'-style escape), which is not Unicode text; "
            "write the character itself"
        )
        out.append(F.error(F.MANIFEST_SCHEMA, msg, manifest.file, manifest.line(*keys)))
    return out


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
    if surely_valid(manifest.data):
        return []
    errors, more = schema_errors(manifest.data)
    out = [finding for err in errors for finding in _describe(manifest, err)]
    if more:
        msg = f"more schema errors than the {len(errors)} listed: fix those and verify again to see the rest"
        out.append(F.error(F.MANIFEST_SCHEMA, msg, manifest.file))
    return out


def surely_valid(data: Any, name: str = "manifest") -> bool:
    """True when jsonschema-rs finds the data valid: then jsonschema, whose messages the findings quote and
    which takes a millisecond a case, need not run (nor load). Where the two could disagree, Rust is the
    stricter (a pattern's `$` before a final newline), so whatever jsonschema refuses never passes here."""
    try:
        fast = fast_validator(name)
        return fast is not None and bool(fast.is_valid(data))
    except Exception:  # data Rust cannot take (a lone surrogate, an integer past 64 bits): jsonschema decides
        return False


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
    return [F.error(F.MANIFEST_SCHEMA, msg, manifest.file, manifest.line(*keys)) for keys, msg in error_messages(err)]


def error_messages(err: Any, at: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """A jsonschema error as the schema findings word it, with the keys of the field at fault; `at` is where
    the validated data stands (a fragment judged on its own)."""
    keys = (*at, *err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        return [_unknown_key(keys, key, err.schema) for key in _extra_keys(err)]
    if err.validator in ("oneOf", "anyOf") and err.context:
        from jsonschema.exceptions import best_match  # jsonschema loads only for an invalid manifest

        err = best_match(err.context)
        keys = keys + tuple(err.relative_path)
    return [(keys, f"{field_path(keys)}: {_message(err)}")]


def _extra_keys(err: Any) -> list[str]:
    allowed = set(err.schema.get("properties", {}))
    return sorted(str(k) for k in err.instance if k not in allowed)


def _unknown_key(keys: tuple[Any, ...], key: str, schema: dict[str, Any]) -> tuple[tuple[Any, ...], str]:
    import difflib  # only for a manifest with an unknown field

    close = difflib.get_close_matches(key, list(schema.get("properties", {})), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return (*keys, key), f"{field_path((*keys, key))}: unknown field '{key}'{hint}"


def dump_tree(tree: Any, suffix: str) -> str:
    """The manifest's text from its round-trip tree: comments, key order and quoting kept."""
    if suffix == ".json":
        return json.dumps(to_plain(tree), indent=2) + "\n"
    from ruamel.yaml import YAML  # for `checker lock` alone: verify never writes a manifest

    yaml = YAML(typ="rt")
    yaml.width = 4096  # never re-wrap the user's lines
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = True
    out = io.StringIO()
    yaml.dump(tree, out)
    return out.getvalue()
