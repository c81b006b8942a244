"""Plain manifest data → typed blocks, once, after the schema has judged the data valid.

The schema is the gate: what reaches `build` has the shape the models describe, so building trusts it and only
picks, for a union, the member the data is. Each type's builder is made once and kept (a manifest of 100,000
cases builds each case with the same function). A field left out of the data takes its default, so an absent
list stays None and an empty one stays [].
"""

from __future__ import annotations

import dataclasses
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


def build_type(tp: Any, data: Any, at: Keys = ()) -> Any:
    """Data of any type the models spell (a list of blocks, a union), built as `build` builds a block."""
    return builder(tp)(data, at)


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


def same(data: Any, at: Keys) -> Any:
    """The builder of a value taken as it is (str, int, bool, Literal, Any): callers skip calling it."""
    return data


def _single(tp: Any) -> Builder:
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, Block):
        return _block(tp)
    if origin is list:
        item = builder(typing.get_args(tp)[0])
        if item is same:  # a list of scalars (tags, a shape): copied, without a key path per item
            return lambda data, at: list(data)
        return lambda data, at: [item(v, (*at, i)) for i, v in enumerate(data)]
    if origin is tuple:
        item = builder(typing.get_args(tp)[0])
        return lambda data, at: tuple(item(v, (*at, i)) for i, v in enumerate(data))
    if origin is dict:
        value = builder(typing.get_args(tp)[1])
        if value is same:  # names to paths (a case's tensor files), free-form settings
            return lambda data, at: {str(k): v for k, v in data.items()}
        return lambda data, at: {str(k): value(v, (*at, k)) for k, v in data.items()}
    if tp is float:
        return lambda data, at: float(data)
    return same


def _block(cls: type[Block]) -> Builder:
    defaults, factories, required = cls._DEFAULTS, cls._FACTORIES, cls._REQUIRED
    new = object.__new__
    fields: dict[str, tuple[str, Builder]] = {}

    def make(data: Any, at: Keys) -> Block:
        if not fields:
            # The fields' builders are made at the block's first use, not with its union's: a manifest makes
            # only the builders of the blocks it has (an image input never the audio steps'), which was most of
            # what a first build cost.
            fields.update({key_of(f): (f.name, builder(hints(cls)[f.name])) for f in cls.manifest_fields()})
        # The fields are written into the new block's __dict__ as its dataclass __init__ would write them (a
        # frozen one's costs as much as the rest of the building: a manifest of 100,000 cases builds in half
        # the time). The data's own keys are read, not every field: a case states a few of its many fields; an
        # open block's other keys are no field and are left out.
        block: Block = new(cls)
        values = block.__dict__
        values.update(defaults)
        for name, factory in factories.items():
            values[name] = factory()
        for key, value in data.items():
            field = fields.get(key)
            if field is not None:
                name, make_field = field
                values[name] = value if make_field is same else make_field(value, (*at, key))
        values["at"] = at
        values["given"] = tuple(data)
        if not required <= values.keys():
            raise TypeError(f"{cls.__name__} lacks {', '.join(sorted(required - values.keys()))}")
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
            scalar: Block = make_block({cls.SCALAR: value}, (*at, name))
            return dataclasses.replace(scalar, given=None)  # written as its one value
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

    def pick(kind: type) -> Builder:
        for shape, make_member in by_shape.items():
            if issubclass(kind, shape) and not (shape is int and issubclass(kind, bool)):
                return make_member
        if issubclass(kind, int) and float in by_shape:
            return lambda data, at: float(data)
        return same

    by_type: dict[type, Builder] = {}  # each concrete type (dict, the loader's marked mapping) picked once

    def make(data: Any, at: Keys) -> Any:
        member = by_type.get(type(data))
        if member is None:
            member = by_type[type(data)] = pick(type(data))
        return member(data, at)

    return make
