"""The manifest's text as a tree with line marks, read under bounds that cost less than what they prevent.

One pass over libyaml's event stream (C, through PyYAML) refuses what makes a few bytes costly (anchors and
aliases that expand into a huge tree, complex keys, nesting past `MAX_DEPTH`, more than `MAX_NODES` nodes) and
builds the tree on the way: a plain manifest, nearly every one, is parsed once, and a costly one is refused
before any other reader has seen it. Where the pass stops, or libyaml might read the text otherwise than
ruamel.yaml does (YAML 1.2, and the reader `checker lock` writes back with: tags, directives, repeated keys,
unquoted values whose type the two resolve apart), ruamel.yaml decides, under the same bounds checked on its own
events, so the findings are ruamel's to the letter. Its scanner is pure Python, tens of seconds a MiB, so it is
asked only about a text of at most `MAX_DOUBTFUL_BYTES`; over that the libyaml pass decides alone, and a doubt
is itself the finding: a manifest that large is written by a tool, and plain.
"""

from __future__ import annotations

import functools
import gc
import re
from dataclasses import dataclass
from typing import Any

from checker import findings as F
from checker.findings import Finding

MAX_NODES = 2_000_000  # the parsed tree's size: what an attacker could make us build
MAX_DEPTH = 64  # a manifest nests six levels; JSON and YAML parsers recurse per level
MAX_DOUBTFUL_BYTES = 256 << 10  # the most ruamel.yaml reads: a few seconds of its pure-Python scanner

ANCHORS = "YAML anchors and aliases are not allowed"
COMPLEX_KEY = "a list or mapping as a key (a YAML complex key) is not allowed"


def too_deep() -> str:
    return f"nested more than {MAX_DEPTH} levels deep"


def too_many() -> str:
    return f"more than {MAX_NODES} YAML nodes"


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
_NUMERIC_START = frozenset("0123456789+-.<=")  # how every value _SPECIAL, _INT or _FLOAT matches begins
_CONSTANTS: dict[str, Any] = {
    **dict.fromkeys(("", "~", "null", "Null", "NULL")),
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
}
# Characters the two parsers treat differently (line breaks counted apart; tabs that ruamel refuses where
# libyaml accepts them): a doubt before the pass begins.
_ODD = re.compile("[\\t\\x85\\u2028\\u2029\\ufeff]")


class _Marks:
    """ruamel.yaml's line-column record (`lc`), as much of it as `Manifest.line` reads: 0-based (line, column).
    It keeps libyaml's own mark of each key or item (a dict by key, a list by index), made for the event anyway."""

    __slots__ = ("data", "plain")

    def __init__(self, data: Any) -> None:
        self.data = data
        self.plain = False  # on the root: every key in the tree is text, so the tree is its own plain data

    def key(self, key: Any) -> tuple[int, int]:
        mark = self.data[key]
        return mark.line, mark.column

    def item(self, index: int) -> tuple[int, int]:
        mark = self.data[index]
        return mark.line, mark.column


class MarkedMap(dict[Any, Any]):
    """A mapping with the line of each key, as ruamel's CommentedMap carries it."""

    __slots__ = ("lc",)

    def __init__(self) -> None:
        super().__init__()
        self.lc = _Marks({})


class MarkedList(list[Any]):
    """A sequence with the line of each item, as ruamel's CommentedSeq carries it."""

    __slots__ = ("lc",)

    def __init__(self) -> None:
        super().__init__()
        self.lc = _Marks([])


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


@dataclass
class _Stop:
    """Why the libyaml pass ended before a tree: a refusal or a syntax error (the finding), or a doubt (what
    ruamel.yaml might read differently, at a 1-based line)."""

    finding: Finding | None = None
    doubt: str = ""
    line: int | None = None


class _Doubt(Exception):
    """The libyaml pass met something ruamel.yaml might read differently."""

    def __init__(self, what: str, mark: Any) -> None:
        super().__init__(what)
        self.what, self.line = what, mark.line + 1


class _Refused(Exception):
    """A bound refused the text, at a 1-based line (None for the node count)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message, self.line = message, line


def _scalar(value: str, mark: Any) -> Any:
    """A plain scalar that may be a number, under YAML 1.2's core types as ruamel.yaml resolves them; _Doubt where
    it might resolve otherwise."""
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    if _SPECIAL.fullmatch(value):
        raise _Doubt(f"the unquoted value {value[:40]!r}, whose type YAML readers resolve differently", mark)
    return value


def _libyaml_tree(text: str, name: str) -> Any:
    """The tree from libyaml's events, or a _Stop; None when libyaml is not there."""
    odd = _ODD.search(text)
    if odd:
        line = text.count("\n", 0, odd.start()) + 1
        return _Stop(doubt=f"a tab or an unusual line break or mark ({odd.group()!r})", line=line)
    import yaml  # not for `checker --help`, which reads no manifest

    loader_class = getattr(yaml, "CSafeLoader", None)
    if loader_class is None:
        return None
    # The tree is acyclic and its nodes live as long as the manifest: the cyclic collector, which would scan the
    # growing tree again and again (a third of the time for 10,000 cases), has nothing to find in it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        loader = loader_class(text)
        try:
            return _compose(loader, yaml.events)
        finally:
            loader.dispose()
            if collecting:
                gc.enable()
    except _Refused as exc:
        return _Stop(F.error(F.MANIFEST_PARSE, exc.message, name, exc.line))
    except _Doubt as exc:
        return _Stop(doubt=exc.what, line=exc.line)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "not valid YAML"
        where = mark.line + 1 if mark else None
        return _Stop(F.error(F.MANIFEST_PARSE, f"not valid YAML: {problem}", name, where))
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: text libyaml cannot take (a lone surrogate)
        return _Stop(F.error(F.MANIFEST_PARSE, f"not valid YAML/JSON ({exc})", name))


def _compose(loader: Any, events: Any) -> Any:
    """Build the tree from the events, checking each against the bounds before placing it. The hot loop of a
    manifest's reading (PyYAML's event objects cost most of it): state in locals, types compared by identity."""
    get_event = loader.get_event
    scalar, mapping_start, sequence_start = events.ScalarEvent, events.MappingStartEvent, events.SequenceStartEvent
    mapping_end, sequence_end = events.MappingEndEvent, events.SequenceEndEvent
    constants, numeric = _CONSTANTS, _NUMERIC_START
    resolved: dict[str, Any] = {}
    stack: list[Any] = []  # open collections; a mapping's pending key sits above it as a (key, mark) tuple
    root: Any = None
    count = depth = 0
    plain = True  # every key is text: the tree is its own plain data
    while True:
        event = get_event()
        count += 1
        if count > MAX_NODES:
            raise _Refused(too_many(), None)
        kind = type(event)
        if kind is scalar:
            if event.anchor is not None:
                raise _Refused(ANCHORS, event.start_mark.line + 1)
            if event.tag is not None:
                raise _Doubt(f"the YAML tag {event.tag!r}", event.start_mark)
            node = event.value
            if event.style:
                pass
            elif node in constants:
                node = constants[node]
            elif node[:1] in numeric:  # a value that starts otherwise is no int, float or special value
                value = resolved.get(node)  # numbers repeat (sizes, shapes): each is resolved once
                if value is None:
                    value = resolved[node] = _scalar(node, event.start_mark)
                node = value
            opened = False
        elif kind is mapping_start or kind is sequence_start:
            _check_collection(event, stack, depth)
            depth += 1
            node = MarkedMap() if kind is mapping_start else MarkedList()
            opened = True
        elif kind is mapping_end or kind is sequence_end:
            depth -= 1
            stack.pop()
            continue
        else:
            root = _other(event, events, loader, root, plain)
            if type(event) is events.StreamEndEvent:
                return root
            continue
        if stack:
            top = stack[-1]
            where = type(top)
            if where is MarkedList:
                top.lc.data.append(event.start_mark)
                top.append(node)
            elif where is MarkedMap:  # a key, waiting for its value
                if node in top or type(node) is float:
                    raise _Doubt(f"the key {str(node)[:40]!r} a second time, or a number as a key", event.start_mark)
                plain = plain and type(node) is str
                stack.append((node, event.start_mark))
            else:
                stack.pop()
                owner = stack[-1]
                owner.lc.data[top[0]] = top[1]
                owner[top[0]] = node
        else:
            root = node
        if opened:
            stack.append(node)


def _check_collection(event: Any, stack: list[Any], depth: int) -> None:
    """A list or mapping opens: refused with an anchor, as a key, or past the depth bound; a doubt with a tag."""
    line = event.start_mark.line + 1
    if event.anchor is not None:
        raise _Refused(ANCHORS, line)
    if stack and type(stack[-1]) is MarkedMap:
        raise _Refused(COMPLEX_KEY, line)
    if depth + 1 > MAX_DEPTH:
        raise _Refused(too_deep(), line)
    if event.tag is not None:
        raise _Doubt(f"the YAML tag {event.tag!r}", event.start_mark)


def _other(event: Any, events: Any, loader: Any, root: Any, plain: bool) -> Any:
    """The stream's and documents' own events: a directive or a second document is ruamel's to read."""
    kind = type(event)
    if kind is events.AliasEvent:
        raise _Refused(ANCHORS, event.start_mark.line + 1)
    if kind is events.DocumentStartEvent and (event.version is not None or event.tags):
        raise _Doubt("a %YAML or %TAG directive", event.start_mark)
    if kind is events.DocumentEndEvent and loader.check_event(events.DocumentStartEvent):
        raise _Doubt("a second YAML document", loader.peek_event().start_mark)
    if kind is events.StreamEndEvent and type(root) is MarkedMap:
        root.lc.plain = plain
    return root


class _Bounds:
    """The libyaml pass's refusals, on ruamel.yaml's events: the same checks in the same order, the same words."""

    def __init__(self, events: Any) -> None:
        self.events = events  # ruamel.yaml's events module
        self.count = 0
        self.open: list[int] = []  # per open collection: -1 for a sequence, else the nodes a mapping has seen

    def check(self, event: Any) -> None:
        events = self.events
        self.count += 1
        if self.count > MAX_NODES:
            raise _Refused(too_many(), None)
        line = event.start_mark.line + 1 if event.start_mark else None
        if isinstance(event, events.AliasEvent) or (isinstance(event, events.NodeEvent) and event.anchor):
            raise _Refused(ANCHORS, line)
        if isinstance(event, events.NodeEvent):
            is_key = bool(self.open) and self.open[-1] >= 0 and self.open[-1] % 2 == 0
            if self.open and self.open[-1] >= 0:
                self.open[-1] += 1
            if isinstance(event, events.CollectionStartEvent):
                if is_key:
                    raise _Refused(COMPLEX_KEY, line)
                self.open.append(0 if isinstance(event, events.MappingStartEvent) else -1)
                if len(self.open) > MAX_DEPTH:
                    raise _Refused(too_deep(), line)
        elif isinstance(event, events.CollectionEndEvent):
            self.open.pop()


@functools.cache
def _bounded_parser() -> type:
    """ruamel.yaml's round-trip parser, each event checked against the bounds before its composer takes it."""
    # ruamel.yaml is slow to import: only a doubtful manifest or `checker lock` needs it
    from ruamel.yaml import events
    from ruamel.yaml.parser import RoundTripParser

    class BoundedParser(RoundTripParser):  # type: ignore[misc]
        def reset_parser(self) -> None:
            super().reset_parser()
            self.bounds = _Bounds(events)

        def get_event(self) -> Any:
            event = super().get_event()
            self.bounds.check(event)
            return event

    return BoundedParser


def _ruamel_tree(text: str, name: str) -> tuple[Any, list[Finding]]:
    """ruamel.yaml's round-trip tree (comments and quoting kept), or None with a `manifest.parse` finding."""
    # ruamel.yaml is slow to import: only a doubtful manifest or `checker lock` needs it
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        yaml = YAML(typ="rt")
        yaml.Parser = _bounded_parser()
        yaml.preserve_quotes = True  # `checker lock` writes the tree back as the user wrote it
        return _mapping(yaml.load(text), name)
    except _Refused as exc:
        return None, [F.error(F.MANIFEST_PARSE, exc.message, name, exc.line)]
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "not valid YAML"
        return None, [F.error(F.MANIFEST_PARSE, f"not valid YAML: {problem}", name, line)]
    except (YAMLError, ValueError, RecursionError) as exc:
        return None, [F.error(F.MANIFEST_PARSE, f"not valid YAML/JSON ({exc})", name)]
    # ruamel's constructor on some odd input; an AssertionError from its scanner, which checks its own state
    # with `assert` ("#: yes" then "|- #": a comment where it keeps none)
    except (IndexError, KeyError, TypeError, AttributeError, AssertionError) as exc:
        return None, [F.error(F.MANIFEST_PARSE, f"not valid YAML: ruamel.yaml cannot build it ({exc!r})", name)]


def _mapping(tree: Any, name: str) -> tuple[Any, list[Finding]]:
    if not isinstance(tree, dict):
        return None, [F.error(F.MANIFEST_PARSE, "the manifest must be a mapping of fields", name, 1)]
    return tree, []


def _too_doubtful(stop: _Stop, text: str, name: str) -> Finding:
    """The finding for a text too large for ruamel.yaml that the libyaml pass could not read alone."""
    if stop.finding is not None:
        return stop.finding
    limit = MAX_DOUBTFUL_BYTES >> 10
    msg = (
        f"{stop.doubt} at line {stop.line}: a manifest over {limit} KiB ({len(text.encode())} bytes here) must be "
        "plain YAML or JSON, read in one pass (no tags, directives, repeated keys, or unquoted values such as "
        "0o17, 1_000 or 2024-01-01 whose type YAML readers resolve differently: quote them)"
    )
    return F.error(F.MANIFEST_PARSE, msg, name, stop.line)


def _small(text: str) -> bool:
    return len(text) <= MAX_DOUBTFUL_BYTES and len(text.encode()) <= MAX_DOUBTFUL_BYTES


def parse_marked(text: str, name: str) -> tuple[Any, list[Finding]]:
    """The parsed tree for reading (data and line marks), or None with a `manifest.parse` finding.

    libyaml (C) parses the plain case, which is nearly every manifest, several times faster than ruamel.yaml;
    whatever it might read differently goes to ruamel.yaml when the text is small enough, so data, lines and
    messages are the same either way. The tree it gives cannot be written back with comments: `checker lock`
    uses `parse_text`.
    """
    got = _libyaml_tree(text, name)
    if type(got) is MarkedMap:
        return got, []
    if got is None or _small(text):
        # ruamel.yaml decides when libyaml is not there, or stops, or reads no mapping (a doubt, an error, a
        # refusal: libyaml takes some text ruamel refuses, such as an anchored empty key): its findings stand.
        return _ruamel_tree(text, name)
    if type(got) is _Stop:
        return None, [_too_doubtful(got, text, name)]
    return _mapping(got, name)


def parse_text(text: str, name: str) -> tuple[Any, list[Finding]]:
    """ruamel.yaml's round-trip tree, which `checker lock` writes back with comments, or None with a finding.

    A text too large for ruamel.yaml to read in seconds is first read by the libyaml pass, so a costly one is
    refused as quickly, and with the same finding, as `parse_marked` refuses it."""
    if not _small(text):
        got = _libyaml_tree(text, name)
        if type(got) is _Stop:
            return None, [_too_doubtful(got, text, name)]
        if got is not None and type(got) is not MarkedMap:
            return _mapping(got, name)
    return _ruamel_tree(text, name)
