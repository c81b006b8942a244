"""The vocabulary every manifest block is written in: a block is a frozen dataclass whose fields carry their
type, bounds, default and words; the JSON Schema (`schema.py`) and the typed manifest (`build.py`) are both
made from it, so a bound is written once.

A field reads as `name: Annotated[int | None, S("Title", "What it is.", minimum=1, maximum=64)] = None`: the
annotation gives the JSON type (`int` → integer, `float` → number, `str`, `bool`, `list[T]`, `dict[str, T]`,
`Literal[...]` → an enum, `Literal[None]` → null, `numbers.Real` → a number kept as written (an integer stays
one), a `Block` → an object, `A | B` → anyOf, or oneOf with `OneOf()`), `S` its title, description and the
other schema keywords, and the default whether the field may be left out (a field with no default is required;
`None` is "absent", which is not the same as an empty list or mapping). A field whose manifest key is a Python
keyword is spelled with a trailing underscore (`import_` is `import:`).
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
    in `TAG`.

    `shared`: a block whose fields the union states once beside the key (a rule's `output` or `answer`,
    `min_pass_rate` and `tags` beside its `check`); each member's `then` lists the fields it takes, so that no
    other key is allowed, and requires those the union does not. The key is no field of a member that
    subclasses a common base (its `TAG` says it), or a field whose value the union's words describe."""

    key: str
    words: S = S()
    shared: type[Block] | None = None


@dataclass(frozen=True)
class Keyed:
    """On a union of blocks written as one-key mappings (`- resize: {size: 224}`): the key names the block, each
    block saying its name in `TAG`; a block with a `SCALAR` field may also be written `name: value`."""

    words: S = S()


@dataclass(frozen=True)
class OneOf:
    """On a union told apart by the data's JSON type: written as `oneOf` (exactly one member matches) rather
    than `anyOf`."""


@dataclass(frozen=True)
class Const:
    """On a one-value `Literal`: written as JSON Schema's `const` alone (`alpha: drop`, a tagged block's `kind`)."""


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
class Block:
    """A manifest block: each subclass is a frozen, keyword-only dataclass of its fields. `at` is where it stands
    in the manifest (("comparison", "rules", 0)), for a finding's line; it is not a manifest field."""

    WORDS: ClassVar[S] = S()  # the block's title and description
    TAG: ClassVar[str] = ""  # the value of its union's key (Tagged), or its name (Keyed)
    SCALAR: ClassVar[str] = ""  # Keyed: the field a `name: value` step fills
    # Keyed with a SCALAR: may also be written as a mapping (`mix: {to: mono}`), the two forms joined by this
    # keyword ("oneOf" or "anyOf"; they accept the same, a scalar never being a mapping); "" for the scalar alone.
    MAPPING: ClassVar[str] = ""
    # Raw schema keywords of the block as a whole that no single field holds: `oneOf` of required sets,
    # `if`/`then` between fields, `dependentSchemas`.
    EXTRA: ClassVar[Mapping[str, Any]] = {}
    OPEN: ClassVar[bool] = False  # True: keys the block does not name are allowed (settings, metadata)

    at: Keys = field(default=(), compare=False, repr=False, metadata={"manifest": False})
    # The keys the manifest gave, in its order (a field it left out holds its default, so only this tells the
    # two apart); None for a Keyed block written as its one value (`mix: mono`). For words that quote the
    # manifest as written; not a manifest field.
    given: tuple[str, ...] | None = field(default=(), compare=False, repr=False, metadata={"manifest": False})

    # The fields equality, hashing and repr look at; set for each subclass.
    _COMPARED: ClassVar[tuple[str, ...]] = ()

    if TYPE_CHECKING:  # made at run time by _fields_of, as dataclass makes it
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    # What Block's one __init__ needs of each block: its field names, defaults, factories and required fields.
    _NAMES: ClassVar[frozenset[str]] = frozenset()
    _DEFAULTS: ClassVar[dict[str, Any]] = {}
    _FACTORIES: ClassVar[dict[str, Any]] = {}
    _REQUIRED: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Equality, hashing, repr, __init__ and the refusal to change a field are Block's own, and the docstring
        # is the block's words: dataclass writes no method for any of the many blocks (each one it writes is
        # compiled from source), which was most of what importing the model cost.
        if cls.__doc__ is None:
            cls.__doc__ = cls.WORDS.description or cls.WORDS.title or cls.__name__
        _fields_of(cls)

    def __init__(self, **values: Any) -> None:
        """A block from its fields by name, as the dataclass __init__ it stands for would take them (the typed
        manifest's builder writes the fields directly)."""
        cls = type(self)
        unknown = values.keys() - cls._NAMES
        if unknown:
            raise TypeError(f"{cls.__name__}() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
        state = self.__dict__
        state.update(cls._DEFAULTS)
        state.update((name, factory()) for name, factory in cls._FACTORIES.items() if name not in values)
        state.update(values)
        missing = cls._REQUIRED - state.keys()
        if missing:
            raise TypeError(f"{cls.__name__}() missing keyword arguments: {', '.join(sorted(missing))}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._COMPARED)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Block)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._COMPARED)
        return f"{type(self).__name__}({shown})"

    @classmethod
    def manifest_fields(cls) -> list[dataclasses.Field[Any]]:
        return [f for f in dataclasses.fields(cls) if f.metadata.get("manifest", True)]


def _fields_of(cls: type[Block]) -> None:
    """Make `cls` a dataclass of its annotated fields (dataclasses.fields() reads them) with no method written,
    and keep what Block's __init__ and equality need. Blocks are immutable through Block.__setattr__, and to
    type checkers through dataclass_transform(frozen_default=True)."""
    dataclass(kw_only=True, init=False, eq=False, repr=False)(cls)
    every = dataclasses.fields(cls)
    cls._COMPARED = tuple(f.name for f in every if f.compare)
    cls._NAMES = frozenset(f.name for f in every)
    cls._DEFAULTS = {f.name: f.default for f in every if f.default is not dataclasses.MISSING}
    cls._FACTORIES = {f.name: f.default_factory for f in every if f.default_factory is not dataclasses.MISSING}
    cls._REQUIRED = cls._NAMES - cls._DEFAULTS.keys() - cls._FACTORIES.keys()


_fields_of(Block)


def key_of(f: dataclasses.Field[Any]) -> str:
    """A field's key in the manifest: its name, less the underscore that keeps a Python keyword apart."""
    return f.name[:-1] if f.name.endswith("_") else f.name


def words_of(annotation_metadata: tuple[Any, ...]) -> S:
    """The `S` among an `Annotated` type's metadata (the last one wins), or empty words."""
    found = [m for m in annotation_metadata if isinstance(m, S)]
    return found[-1] if found else S()
