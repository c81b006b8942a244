"""Loading a manifest: bounded YAML/JSON parsing that keeps line marks, then the version and the schema."""

from __future__ import annotations

import gc
import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.bundle.paths import BundlePathError, regular_size, resolve_inside
from checker.findings import Finding
from checker.manifest.schema import fast_validator, validator
from checker.manifest.strings import unencodable_fields

MAX_MANIFEST_BYTES = 16 << 20  # a release with tens of thousands of cases; the node count bounds the work
MAX_NODES = 2_000_000  # the parsed tree's size: what an attacker could make us build
MAX_DEPTH = 64  # a manifest nests six levels; JSON and YAML parsers recurse per level
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


def plain_data(tree: Any) -> Any:
    """The tree as plain data: the fast path's tree itself when all its keys are text (it is made of dicts,
    lists and plain scalars already), else a plain copy."""
    if type(tree) is MarkedMap and tree.lc.plain:
        return tree
    return to_plain(tree)


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
    except (IndexError, KeyError, TypeError, AttributeError) as exc:  # ruamel's constructor on some odd input
        return None, [F.error(F.MANIFEST_PARSE, f"not valid YAML: ruamel.yaml cannot build it ({exc!r})", name)]
    if not isinstance(tree, dict):
        return None, [F.error(F.MANIFEST_PARSE, "the manifest must be a mapping of fields", name, 1)]
    return tree, []


# YAML 1.2's implicit types as ruamel.yaml resolves them (its resolver's own patterns): a plain scalar that
# matches one of these and is not a plain decimal int or float is left to ruamel, so both loaders agree.
_SPECIAL = re.compile(
    r"""[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+
    |<<|=|[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[\ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
     (?:[\ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?""",
    re.X,
)
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]*(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)")
_CONSTANTS: dict[str, Any] = {
    **dict.fromkeys(("", "~", "null", "Null", "NULL")),
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
}
# Characters the two parsers treat differently (line breaks counted apart; tabs that ruamel refuses where
# libyaml accepts them): a manifest with one takes ruamel's path.
_ODD = re.compile("[\\t\\x85\\u2028\\u2029\\ufeff]")


class _Unsure(Exception):
    """The fast path met something it does not resolve exactly as ruamel.yaml does: ruamel decides."""


class _Marks:
    """ruamel.yaml's line-column record (`lc`), as much of it as `Manifest.line` reads: 0-based (line, column)."""

    __slots__ = ("data", "plain")

    def __init__(self) -> None:
        self.data: dict[Any, tuple[int, int]] = {}
        self.plain = False  # on the root: every key in the tree is text, so the tree is its own plain data

    def key(self, key: Any) -> tuple[int, int]:
        return self.data[key]

    def item(self, index: int) -> tuple[int, int]:
        return self.data[index]


class MarkedMap(dict[Any, Any]):
    """A mapping with the line of each key, as ruamel's CommentedMap carries it."""

    __slots__ = ("lc",)

    def __init__(self) -> None:
        super().__init__()
        self.lc = _Marks()


class MarkedList(list[Any]):
    """A sequence with the line of each item, as ruamel's CommentedSeq carries it."""

    __slots__ = ("lc",)

    def __init__(self) -> None:
        super().__init__()
        self.lc = _Marks()


def _scalar(value: str, plain: bool) -> Any:
    """A scalar's value under YAML 1.2's core types, as ruamel.yaml resolves it; _Unsure for what it might not."""
    if not plain:
        return value
    if value in _CONSTANTS:
        return _CONSTANTS[value]
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    if _SPECIAL.fullmatch(value):
        raise _Unsure(value)
    return value


def _fast_tree(text: str) -> Any:
    """The manifest's tree from libyaml's event stream (C), with line marks; _Unsure when ruamel must decide.

    Built here from events rather than by PyYAML's composer, which recurses in C and would crash on deep
    nesting; the same bounds as ruamel's path are checked on the way (a breach goes to ruamel, which words it).
    Anchors, aliases, tags, directives and complex keys are rare in a manifest and left to ruamel.
    """
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", None)
    if loader_class is None or _ODD.search(text):
        raise _Unsure("no libyaml")
    # The tree is acyclic and its nodes live as long as the manifest: the cyclic collector, which would scan the
    # growing tree again and again (a third of the time for 10,000 cases), has nothing to find in it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        loader = loader_class(text)
        try:
            return _compose(loader)
        finally:
            loader.dispose()
            if collecting:
                gc.enable()
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: text libyaml cannot take (a lone surrogate)
        raise _Unsure("libyaml refused it") from exc


def _compose(loader: Any) -> Any:
    from yaml import events as E

    stack: list[Any] = []  # open collections; a mapping's pending key sits above it as a tuple
    root: Any = None
    count = depth = 0
    odd_keys: list[Any] = []  # keys that are not text (1, true, null): the plain data then needs to_plain
    while True:
        event = loader.get_event()
        count += 1
        kind = type(event)
        if count > MAX_NODES:
            raise _Unsure("bounds")
        if kind is E.ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise _Unsure("anchor or tag")
            root = _place(stack, _scalar(event.value, not event.style), event.start_mark, root, odd_keys)
        elif kind is E.MappingStartEvent or kind is E.SequenceStartEvent:
            if event.anchor is not None or event.tag is not None:
                raise _Unsure("anchor or tag")
            node = MarkedMap() if kind is E.MappingStartEvent else MarkedList()
            depth += 1
            if depth > MAX_DEPTH or (stack and type(stack[-1]) is MarkedMap):
                raise _Unsure("too deep, or a complex key")
            root = _place(stack, node, event.start_mark, root, odd_keys)
            stack.append(node)
        elif kind is E.MappingEndEvent or kind is E.SequenceEndEvent:
            depth -= 1
            stack.pop()
        elif kind is E.DocumentStartEvent:
            if event.version is not None or event.tags:
                raise _Unsure("directive")
        elif kind is E.StreamEndEvent:
            if type(root) is MarkedMap:
                root.lc.plain = not odd_keys
            return root
        elif kind is E.DocumentEndEvent:
            if loader.check_event(E.DocumentStartEvent):
                raise _Unsure("several documents")  # ruamel words the error
        elif kind is not E.StreamStartEvent:
            raise _Unsure(kind.__name__)  # an alias


def _place(stack: list[Any], value: Any, mark: Any, root: Any, odd_keys: list[Any]) -> Any:
    """Put a value where the open collection wants it: an item, a key, or a key's value."""
    if not stack:
        return value
    top = stack[-1]
    kind = type(top)
    if kind is MarkedList:
        top.lc.data[len(top)] = (mark.line, mark.column)
        top.append(value)
    elif kind is MarkedMap:
        if value in top or type(value) is float:
            raise _Unsure("duplicate or float key")
        if type(value) is not str:
            odd_keys.append(value)
        stack.append((value, mark.line, mark.column))
    else:  # a key waits for its value
        stack.pop()
        mapping = stack[-1]
        key, line, column = top
        mapping.lc.data[key] = (line, column)
        mapping[key] = value
    return root


def parse_marked(text: str, name: str) -> tuple[Any, list[Finding]]:
    """The parsed tree for reading (data and line marks), or None with a `manifest.parse` finding.

    libyaml (C) parses the plain case, which is nearly every manifest, several times faster than ruamel.yaml;
    whatever it might read differently or refuse goes to `parse_text`, so data, lines and messages are the
    same either way. The tree it gives cannot be written back with comments: `checker lock` uses `parse_text`.
    """
    try:
        tree = _fast_tree(text)
    except (_Unsure, ImportError):  # any doubt at all: ruamel decides, and words any error
        return parse_text(text, name)
    if not isinstance(tree, dict):
        return parse_text(text, name)
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
    out = []
    for err in sorted(validator("manifest").iter_errors(manifest.data), key=lambda e: list(e.absolute_path)):
        out.extend(_describe(manifest, err))
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
    import difflib

    line = manifest.line(*keys, key)
    close = difflib.get_close_matches(key, list(schema.get("properties", {})), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    msg = f"{field_path((*keys, key))}: unknown field '{key}'{hint}"
    return F.error(F.MANIFEST_SCHEMA, msg, manifest.file, line)


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
