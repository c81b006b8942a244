"""A tabular input's preprocessing as the manifest declares it: its columns in the model's feature order, each
with its dtype, at most one transform, and what fills a missing cell.

The block is typed (checker/manifest/model/tabular.py): the schema has checked each value and bounded the sizes
a block declares; what it cannot say (a name given twice, a string column without categories, a fill of the
column's type) is checked here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from checker.manifest.model import tabular as m
from checker.preprocess import fields as f
from checker.preprocess.checked import checked
from checker.preprocess.errors import PreprocessError

# No tabular model of an edge release has more features than this (a one-hot column makes one per category).
MAX_FEATURES = 1 << 16
DEFAULT_TOLERANCE = m.Tabular.tolerance

Value = float | int | bool | str  # a parsed cell: a number, a flag or a category name


@dataclass(frozen=True)
class Standard:
    mean: float
    std: float
    key = "standard"

    def words(self) -> str:
        return f"standard: {{mean: {self.mean:g}, std: {self.std:g}}}"


@dataclass(frozen=True)
class MinMax:
    min: float
    max: float
    key = "min_max"

    def words(self) -> str:
        return f"min_max: {{min: {self.min:g}, max: {self.max:g}}}"


@dataclass(frozen=True)
class Ordinal:
    categories: tuple[Value, ...]
    unknown: float | None = None  # the value an unlisted category takes; None: it is an error
    key = "ordinal"

    @property
    def width(self) -> int:
        return 1


@dataclass(frozen=True)
class OneHot:
    categories: tuple[Value, ...]
    ignore_unknown: bool = False  # an unlisted category is all zeros (scikit-learn's handle_unknown="ignore")
    key = "one_hot"

    @property
    def width(self) -> int:
        return len(self.categories)


Transform = Standard | MinMax | Ordinal | OneHot


@dataclass(frozen=True)
class Fill:
    """What a missing cell becomes: an error (`value` None) or the fill value, before the column's transform."""

    value: Value | None = None

    @property
    def refuses(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    transform: Transform | None = None
    missing: Fill | None = None  # parsed: its own policy, or None for the block's; resolved by from_manifest

    @property
    def width(self) -> int:
        """How many features the column makes."""
        return self.transform.width if isinstance(self.transform, (Ordinal, OneHot)) else 1

    @property
    def categories(self) -> tuple[Value, ...] | None:
        return self.transform.categories if isinstance(self.transform, (Ordinal, OneHot)) else None


@dataclass(frozen=True)
class TabularSpec:
    columns: tuple[Column, ...]
    missing: Fill = Fill()
    tolerance: float = DEFAULT_TOLERANCE

    @property
    def width(self) -> int:
        return sum(c.width for c in self.columns)

    def with_columns(self, columns: list[Column] | tuple[Column, ...]) -> TabularSpec:
        return replace(self, columns=tuple(columns))

    @classmethod
    def from_manifest(cls, prep: m.Tabular | dict[str, Any]) -> TabularSpec:
        """The typed block, its imported columns read in place of `import` (plain data, a test's or a skops
        file's, is judged by the schema first)."""
        if not isinstance(prep, m.Tabular):
            return cls.from_manifest(checked(m.Tabular, {"kind": "tabular", **prep}, "preprocessing"))
        if prep.columns is None:
            raise PreprocessError("preprocessing.import is read before parsing: give the columns it becomes")
        parsed = tuple(_column(c, i) for i, c in enumerate(prep.columns))
        seen: set[str] = set()
        for c in parsed:
            if c.name in seen:
                raise PreprocessError(f"preprocessing.columns names '{c.name}' twice")
            seen.add(c.name)
        spec = cls(parsed, _fill(prep.missing, None, "preprocessing.missing"), prep.tolerance)
        if spec.width > MAX_FEATURES:
            raise PreprocessError(f"preprocessing.columns make {spec.width} features; at most {MAX_FEATURES}")
        # Each column holds its own policy, typed as its cells are, so that a reordered list keeps it.
        return spec.with_columns([replace(c, missing=_resolved(c, spec.missing)) for c in parsed])


def _column(column: m.Column, i: int) -> Column:
    where = f"preprocessing.columns[{i}]"
    name, dtype = column.name, column.dtype
    given = [(key, getattr(column, key)) for key in m.TRANSFORMS if getattr(column, key) is not None]
    transform = _transform(*given[0], dtype, f"{where}.{given[0][0]}") if given else None
    if dtype == "string" and not isinstance(transform, (Ordinal, OneHot)):
        raise PreprocessError(f"{where} ('{name}') is a string column without ordinal or one_hot categories")
    missing = None if column.missing is None else _fill(column.missing, dtype, f"{where}.missing")
    return Column(name, dtype, transform, missing)


def _transform(key: str, block: Any, dtype: str, where: str) -> Transform:
    if key in ("standard", "min_max") and dtype == "string":
        raise PreprocessError(f"{where}: a string column cannot be scaled; give it categories")
    if isinstance(block, m.Standard):
        if block.std == 0:
            raise PreprocessError(f"{where}.std is 0; a constant column's std is 1 (as scikit-learn keeps it)")
        return Standard(block.mean, block.std)
    if isinstance(block, m.MinMax):
        if block.min == block.max:
            raise PreprocessError(f"{where}: min equals max ({block.min:g}); the scaling divides by max - min")
        return MinMax(block.min, block.max)
    categories = _categories(block.categories, dtype, f"{where}.categories")
    if isinstance(block, m.OneHot):
        return OneHot(categories, block.unknown == "ignore")
    return Ordinal(categories, None if block.unknown == "error" else float(block.unknown))


def _categories(values: list[Any], dtype: str, where: str) -> tuple[Value, ...]:
    out = tuple(_typed(v, dtype, where) for v in values)
    if len(set(out)) != len(out):
        raise PreprocessError(f"{where} lists a category twice")
    return out


def _typed(value: Any, dtype: str, where: str) -> Value:
    """A manifest value (a category, a fill) as the column's dtype holds it."""
    if dtype == "string":
        if not isinstance(value, str):  # the schema bounds its length
            raise PreprocessError(f"{where}: {str(value)[:40]!r} is not a string")
        return value
    if dtype == "bool":
        if not isinstance(value, bool):
            raise PreprocessError(f"{where}: {str(value)[:40]!r} is not true or false")
        return value
    if dtype == "int64":
        if isinstance(value, bool) or not isinstance(value, int) or not -(1 << 63) <= value < 1 << 63:
            raise PreprocessError(f"{where}: {str(value)[:40]!r} is not a 64-bit integer")
        return value
    return f.number(value, where)


def _fill(value: Any, dtype: str | None, where: str) -> Fill:
    """`error` (the default), a fill value, or {fill: value} (for a string column whose fill is `error`)."""
    if value == "error":
        return Fill()
    if isinstance(value, m.Fill):
        value = value.fill
    return Fill(_typed(value, dtype, where) if dtype is not None else value)


def _resolved(column: Column, block: Fill) -> Fill:
    """The column's policy (its own, else the block's) with the fill value as the column's dtype holds it."""
    fill = column.missing if column.missing is not None else block
    if fill.value is None:
        return fill
    where = f"the fill value of column '{column.name}'"
    value = float(fill.value) if column.dtype.startswith("float") and _numeric(fill.value) else fill.value
    typed = _typed(value, column.dtype, where)
    cats = column.categories
    if cats is not None and typed not in cats and not _tolerates_unknown(column):
        raise PreprocessError(f"{where}, {typed!r}, is not one of its categories")
    return Fill(typed)


def _tolerates_unknown(column: Column) -> bool:
    t = column.transform
    return (isinstance(t, OneHot) and t.ignore_unknown) or (isinstance(t, Ordinal) and t.unknown is not None)


def _numeric(value: Value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
