"""The JSON Schema of a block, made from its fields: what `schemas/manifest.schema.json` is generated from
(`python scripts/schema.py` writes it; `tests/manifest/test_model_schema.py` holds the file to the models)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import types
import typing
from numbers import Real
from typing import Any, Literal, Union

from checker.manifest.model.core import Block, Const, Keyed, OneOf, S, Tagged, key_of

# `Real` is a JSON number built as written: an integer stays one (a tabular category, an audio gain quoted back).
JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", Real: "number", bool: "boolean"}


def merged(words: list[S]) -> S:
    """Words given at several levels (a named type, then the field that uses it): the later one wins field by
    field, and raw keywords add up."""
    out = S()
    for w in words:
        changes = {f.name: getattr(w, f.name) for f in dataclasses.fields(S) if getattr(w, f.name) is not None}
        extra = {**out.extra, **w.extra}
        out = dataclasses.replace(out, **{**changes, "extra": extra})
    return out


def unwrap(tp: Any) -> tuple[Any, list[Any]]:
    """A type without its `Annotated` layers, and their metadata in order (outermost last)."""
    meta: list[Any] = []
    while typing.get_origin(tp) is typing.Annotated:
        tp, *more = typing.get_args(tp)
        meta = [*more, *meta]
    return tp, meta


def members(tp: Any) -> list[Any]:
    """The members of a union (`A | B`, `Optional[A]`), None left out; a plain type is its only member."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        return [m for m in typing.get_args(tp) if m is not type(None)]
    return [tp]


_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    """A block's field types, resolved once (the builders and the generator ask for them often). Each class's
    own annotations are resolved once, its bases' taken from here: typing.get_type_hints(cls) would evaluate
    Block's own annotations again for every block, most of what the first build of a manifest costs."""
    if cls not in _HINTS:
        found: dict[str, Any] = {}
        for base in reversed(cls.__mro__[1:]):
            if issubclass(base, Block) and base is not Block:
                found.update(hints(base))
        own = types.SimpleNamespace(__annotations__=inspect.get_annotations(cls))
        module = vars(sys.modules[cls.__module__])
        found.update(typing.get_type_hints(own, globalns=module, localns=dict(vars(cls)), include_extras=True))
        _HINTS[cls] = found
    return _HINTS[cls]


def schema_of(tp: Any, outer: S | None = None) -> dict[str, Any]:
    """The schema of a type, with the words of the field that holds it (`outer`) over the type's own."""
    bare, meta = unwrap(tp)
    options = members(bare)
    own = [options[0].WORDS] if len(options) == 1 and _is_block(options[0]) else []
    words = merged(own + [m for m in meta if isinstance(m, S)] + ([outer] if outer else []))
    union = next((m for m in meta if isinstance(m, (Tagged, Keyed))), None)
    if len(options) == 1 and typing.get_origin(options[0]) is typing.Annotated:
        return schema_of(options[0], words)  # `Named | None`: the named type, with these words over its own
    head: dict[str, Any] = {}
    if words.title is not None:
        head["title"] = words.title
    if words.description is not None:
        head["description"] = words.description
    if isinstance(union, Tagged):
        return {**head, **_tagged(union, options), **words.keywords()}
    if isinstance(union, Keyed):
        return {**head, **_keyed(options), **words.keywords()}
    if len(options) > 1:
        among = "oneOf" if any(isinstance(m, OneOf) for m in meta) else "anyOf"
        return {**head, among: [schema_of(m) for m in options], **words.keywords()}
    if any(isinstance(m, Const) for m in meta):
        return {**head, "const": typing.get_args(options[0])[0], **words.keywords()}
    return {**head, **_body(options[0], words)}


def _is_block(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Block)


def _body(tp: Any, words: S) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if tp in JSON_TYPES:
        return {"type": JSON_TYPES[tp], **words.keywords()}
    if origin is Literal:
        values = list(typing.get_args(tp))
        if values == [None]:  # a JSON null among a union's members
            return {"type": "null", **words.keywords()}
        return {"type": JSON_TYPES[type(values[0])], "enum": values, **words.keywords()}
    if origin in (list, tuple):
        item = typing.get_args(tp)[0]
        return {"type": "array", **words.keywords(), "items": schema_of(item, words.items)}
    if origin is dict:
        value = typing.get_args(tp)[1]
        if value is Any and words.items is None:  # free-form: any keys, any values
            return {"type": "object", **words.keywords()}
        return {"type": "object", **words.keywords(), "additionalProperties": schema_of(value, words.items)}
    if isinstance(tp, type) and issubclass(tp, Block):
        return {**block_schema(tp, head=False), **words.keywords()}
    if tp is Any:
        return words.keywords()
    raise TypeError(f"no schema for {tp!r}")


def block_schema(cls: type[Block], head: bool = True) -> dict[str, Any]:
    """A block as an object: its fields as properties, those without a default required, no other key unless
    the block is open."""
    out: dict[str, Any] = {}
    if head and cls.WORDS.title is not None:
        out["title"] = cls.WORDS.title
    if head and cls.WORDS.description is not None:
        out["description"] = cls.WORDS.description
    out["type"] = "object"
    out.update(cls.WORDS.keywords())
    properties = {key_of(f): _property(cls, f) for f in cls.manifest_fields()}
    if properties:
        out["properties"] = properties
    if not cls.OPEN:
        out["additionalProperties"] = False
    required = [key_of(f) for f in cls.manifest_fields() if _required(f)]
    if required:
        out["required"] = required
    out.update(cls.EXTRA)
    return out


def _property(cls: type[Block], f: dataclasses.Field[Any]) -> dict[str, Any]:
    """A field's schema, with its default when it has one other than "absent"."""
    out = schema_of(hints(cls)[f.name])
    if f.default is not dataclasses.MISSING and f.default is not None:
        out["default"] = f.default
    return out


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _tagged(union: Tagged, options: list[Any]) -> dict[str, Any]:
    """A union picked by one key's value: the key's enum, then one `if key is X then block X` per block."""
    blocks = [m for m in options if isinstance(m, type) and issubclass(m, Block)]
    tag = {**_head(union.words), "type": "string", "enum": [b.TAG for b in blocks]}
    if union.shared is not None:
        return _tagged_shared(union.key, union.shared, blocks, tag)
    return {
        "type": "object",
        "required": [union.key],
        "properties": {union.key: tag},
        "allOf": [
            {
                "if": {"properties": {union.key: {"const": b.TAG}}, "required": [union.key]},
                "then": _tagged_block(b, union.key),
            }
            for b in blocks
        ],
    }


def _tagged_block(cls: type[Block], key: str) -> dict[str, Any]:
    schema = block_schema(cls)
    return {k: v for k, v in schema.items() if k not in ("title", "description", "type")}


def _tagged_shared(key: str, shared: type[Block], blocks: list[Any], tag: dict[str, Any]) -> dict[str, Any]:
    """A union whose members share `shared`'s fields: the key and those fields once on the union, and per
    member every field it takes (the key among them), requiring only what the union does not."""
    base = block_schema(shared, head=False)
    common = base.get("required", [])
    out: dict[str, Any] = {
        "type": "object",
        "required": [key, *common],
        "properties": {key: tag, **base.get("properties", {})},
    }
    out["allOf"] = []
    for b in blocks:
        then = _tagged_block(b, key)
        then["properties"] = {key: tag, **then.get("properties", {})}
        then["properties"][key] = tag  # a member that holds the key as a field (a rule on an answer) says the union's
        own = [name for name in then.pop("required", []) if name not in common]
        if own:
            then["required"] = own
        out["allOf"].append({"if": {"properties": {key: {"const": b.TAG}}, "required": [key]}, "then": then})
    return out


def _keyed(options: list[Any]) -> dict[str, Any]:
    """A union of one-key mappings: the key names the block (`resize: {...}`), or, for a block with a scalar
    field, holds that field's value (`scale: 0.0039`), or either for a block that may also be a mapping
    (`mix: mono` or `mix: {to: mono}`; `apply: sigmoid` or `apply: {function: softmax, axis: 1}`)."""
    properties = {}
    for b in options:
        if b.SCALAR:
            value = {k: v for k, v in schema_of(hints(b)[b.SCALAR]).items() if k not in _HEAD}
            if b.MAPPING:
                value = {b.MAPPING: [value, block_schema(b, head=False)]}
            properties[b.TAG] = {**_head(b.WORDS), **value}
        else:
            properties[b.TAG] = block_schema(b)
    return {
        "type": "object",
        "minProperties": 1,
        "maxProperties": 1,
        "properties": properties,
        "additionalProperties": False,
    }


_HEAD = ("title", "description")


def _head(words: S) -> dict[str, Any]:
    return {k: v for k, v in (("title", words.title), ("description", words.description)) if v is not None}


def dumps(schema: dict[str, Any]) -> str:
    """The committed file's text: two-space indents, non-ASCII kept, a final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
