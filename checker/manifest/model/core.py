"""The vocabulary every manifest block is written in: a block is a frozen dataclass whose fields carry their
type, bounds, default and words; the JSON Schema (`schema.py`) and the typed manifest (`build.py`) are both
made from it, so a bound is written once.

A field reads as `name: Annotated[int | None, S("Title", "What it is.", minimum=1, maximum=64)] = None`: the
annotation gives the JSON type (`int` → integer, `float` → number, `str`, `bool`, `list[T]`, `dict[str, T]`,
`Literal[...]` → an enum, a `Block` → an object, `A | B` → anyOf), `S` its title, description and the other
schema keywords, and the default whether the field may be left out (a field with no default is required;
`None` is "absent", which is not the same as an empty list or mapping).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Any:
        return lambda cls: cls


Keys = tuple[str | int, ...]

# Python spellings of the JSON Schema keywords a field may carry, in the order the schema writes them.
_KEYWORDS = {
    "const": "const",
    "enum": "enum",
    "pattern": "pattern",
    "min_length": "minLength",
    "max_length": "maxLength",
    "minimum": "minimum",
    "exclusive_minimum": "exclusiveMinimum",
    "maximum": "maximum",
    "exclusive_maximum": "exclusiveMaximum",
    "min_items": "minItems",
    "max_items": "maxItems",
    "unique_items": "uniqueItems",
    "min_properties": "minProperties",
    "max_properties": "maxProperties",
}


@dataclass(frozen=True, eq=False)  # hashed by identity: S sits inside types, which are hashed
class S:
    """A field's words and bounds: the schema keywords beyond its type. `extra` holds raw keywords a field
    needs that the vocabulary does not name (a `not`, an `if`), written as they appear in the schema."""

    title: str | None = None
    description: str | None = None
    const: Any = None
    enum: tuple[Any, ...] | None = None
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    exclusive_maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool | None = None
    min_properties: int | None = None
    max_properties: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # Words and bounds of a list's items or a mapping's values, when they are not a named type of their own.
    items: S | None = None

    def keywords(self) -> dict[str, Any]:
        """The schema keywords this carries, other than title and description, in the schema's order."""
        out: dict[str, Any] = {}
        for name, keyword in _KEYWORDS.items():
            value = getattr(self, name)
            if value is not None:
                out[keyword] = list(value) if isinstance(value, tuple) else value
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class Tagged:
    """On a union of blocks: the key whose value picks the block (`kind: image`), each block saying its own value
    in `TAG`."""

    key: str
    words: S = S()


@dataclass(frozen=True)
class Keyed:
    """On a union of blocks written as one-key mappings (`- resize: {size: 224}`): the key names the block, each
    block saying its name in `TAG`; a block with a `SCALAR` field may also be written `name: value`."""

    words: S = S()


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
@dataclass(frozen=True, kw_only=True)
class Block:
    """A manifest block: each subclass is a frozen, keyword-only dataclass of its fields. `at` is where it stands
    in the manifest (("comparison", "rules", 0)), for a finding's line; it is not a manifest field."""

    WORDS: ClassVar[S] = S()  # the block's title and description
    TAG: ClassVar[str] = ""  # the value of its union's key (Tagged), or its name (Keyed)
    SCALAR: ClassVar[str] = ""  # Keyed: the field a `name: value` step fills
    # Raw schema keywords of the block as a whole that no single field holds: `oneOf` of required sets,
    # `if`/`then` between fields, `dependentSchemas`.
    EXTRA: ClassVar[Mapping[str, Any]] = {}
    OPEN: ClassVar[bool] = False  # True: keys the block does not name are allowed (settings, metadata)

    at: Keys = field(default=(), compare=False, repr=False, metadata={"manifest": False})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True, kw_only=True)(cls)

    @classmethod
    def manifest_fields(cls) -> list[dataclasses.Field[Any]]:
        return [f for f in dataclasses.fields(cls) if f.metadata.get("manifest", True)]


def key_of(f: dataclasses.Field[Any]) -> str:
    """A field's key in the manifest: its name, less the trailing underscore a Python keyword takes (`from_` is
    the key `from`)."""
    return f.name[:-1] if f.name.endswith("_") else f.name


def words_of(annotation_metadata: tuple[Any, ...]) -> S:
    """The `S` among an `Annotated` type's metadata (the last one wins), or empty words."""
    found = [m for m in annotation_metadata if isinstance(m, S)]
    return found[-1] if found else S()
