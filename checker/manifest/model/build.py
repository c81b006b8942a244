"""Plain manifest data → typed blocks, once, after the schema has judged the data valid.

The schema is the gate: what reaches `build` has the shape the models describe, so building trusts it and only
picks, for a union, the member the data is. Each type's builder is made once and kept (a manifest of 100,000
cases builds each case with the same function). A field left out of the data takes its default, so an absent
list stays None and an empty one stays [].
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from checker.manifest.model.core import Block, Keyed, Keys, Tagged, key_of
from checker.manifest.model.generate import hints, members, unwrap

T = TypeVar("T", bound=Block)
Builder = Callable[[Any, Keys], Any]


def build(cls: type[T], data: Any, at: Keys = ()) -> T:
    kind: Any = cls  # functools.cache keys on it: a class is hashable, though mypy reads Block's __hash__
    built: T = builder(kind)(data, at)
    return built


@functools.cache
def builder(tp: Any) -> Builder:
    bare, meta = unwrap(tp)
    union = next((m for m in meta if isinstance(m, (Tagged, Keyed))), None)
    options = members(bare)
    if isinstance(union, Tagged):
        return _tagged(union.key, options)
    if isinstance(union, Keyed):
        return _keyed(options)
    if len(options) > 1:
        return _untagged(options)
    if typing.get_origin(options[0]) is typing.Annotated:
        return builder(options[0])
    return _single(options[0])


def _single(tp: Any) -> Builder:
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, Block):
        return _block(tp)
    if origin is list:
        item = builder(typing.get_args(tp)[0])
        return lambda data, at: [item(v, (*at, i)) for i, v in enumerate(data)]
    if origin is tuple:
        item = builder(typing.get_args(tp)[0])
        return lambda data, at: tuple(item(v, (*at, i)) for i, v in enumerate(data))
    if origin is dict:
        value = builder(typing.get_args(tp)[1])
        return lambda data, at: {str(k): value(v, (*at, k)) for k, v in data.items()}
    if tp is float:
        return lambda data, at: float(data)
    return lambda data, at: data  # str, int, bool, Literal, Any: the data itself


def _block(cls: type[Block]) -> Builder:
    fields = [(f.name, key_of(f), builder(hints(cls)[f.name])) for f in cls.manifest_fields()]
    make_block: Any = cls

    def make(data: Any, at: Keys) -> Block:
        kwargs = {name: make_field(data[key], (*at, key)) for name, key, make_field in fields if key in data}
        block: Block = make_block(**kwargs, at=at)
        return block

    return make


def _tagged(key: str, options: list[Any]) -> Builder:
    by_tag = {b.TAG: _block(b) for b in options}
    return lambda data, at: by_tag[data[key]](data, at)


def _keyed(options: list[Any]) -> Builder:
    """`{name: params}` → the block named; a scalar block's `{name: value}` fills its one field."""
    by_tag = {b.TAG: (b, _block(b)) for b in options}

    def make(data: Any, at: Keys) -> Block:
        ((name, value),) = data.items()
        cls, make_block = by_tag[name]
        if cls.SCALAR and not isinstance(value, dict):
            value = {cls.SCALAR: value}
        block: Block = make_block(value, (*at, name))
        return block

    return make


def _untagged(options: list[Any]) -> Builder:
    """A union told apart by the data's JSON type: a mapping is the member that is a block or a dict, a list the
    list member, a scalar itself."""
    by_shape: dict[type, Builder] = {}
    for option in options:
        bare, _ = unwrap(option)
        origin = typing.get_origin(bare) or bare
        if origin is Literal:
            origin = type(typing.get_args(bare)[0])
        shape = dict if isinstance(origin, type) and issubclass(origin, (Block, dict)) else origin
        shape = list if shape is tuple else shape
        by_shape.setdefault(shape, builder(option))

    def make(data: Any, at: Keys) -> Any:
        for shape, make_member in by_shape.items():
            if isinstance(data, shape) and not (shape is int and isinstance(data, bool)):
                return make_member(data, at)
        if isinstance(data, int) and float in by_shape:
            return float(data)
        return data

    return make
