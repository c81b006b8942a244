"""A tabular input's preprocessing as the manifest declares it: its columns in the model's feature order, each
with its dtype, at most one transform, and what fills a missing cell.

The manifest is hostile input: every value is checked here, and the sizes it declares are bounded so that a
block cannot make the checker allocate more than a small table needs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from checker.preprocess import fields as f
from checker.preprocess.errors import PreprocessError

DTYPES = ("float64", "float32", "int64", "bool", "string")
# Bounds on what a block can declare: no tabular model of an edge release has more features than this.
MAX_COLUMNS = 4096
MAX_CATEGORIES = 4096
MAX_FEATURES = 1 << 16
MAX_NAME = 256
DEFAULT_TOLERANCE = 1e-6

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
    def from_manifest(cls, prep: dict[str, Any]) -> TabularSpec:
        columns = prep.get("columns")
        if not isinstance(columns, list) or not 1 <= len(columns) <= MAX_COLUMNS:
            raise PreprocessError(f"preprocessing.columns must list 1 to {MAX_COLUMNS} columns")
        parsed = tuple(_column(c, i) for i, c in enumerate(columns))
        seen: set[str] = set()
        for c in parsed:
            if c.name in seen:
                raise PreprocessError(f"preprocessing.columns names '{c.name}' twice")
            seen.add(c.name)
        spec = cls(parsed, _fill(prep.get("missing"), None, "preprocessing.missing"), _tolerance(prep))
        if spec.width > MAX_FEATURES:
            raise PreprocessError(f"preprocessing.columns make {spec.width} features; at most {MAX_FEATURES}")
        # Each column holds its own policy, typed as its cells are, so that a reordered list keeps it.
        return spec.with_columns([replace(c, missing=_resolved(c, spec.missing)) for c in parsed])


def _column(value: Any, i: int) -> Column:
    where = f"preprocessing.columns[{i}]"
    if not isinstance(value, dict):
        raise PreprocessError(f"{where} is {str(value)[:60]}; expected a mapping with name and dtype")
    unknown = set(value) - {"name", "dtype", "missing", "standard", "min_max", "ordinal", "one_hot"}
    if unknown:
        raise PreprocessError(f"{where} has unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    name = value.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME:
        raise PreprocessError(f"{where}.name must be a string of 1 to {MAX_NAME} characters")
    dtype = f.choice(value, "dtype", DTYPES, "float64", where)
    transforms = [k for k in ("standard", "min_max", "ordinal", "one_hot") if k in value]
    if len(transforms) > 1:
        raise PreprocessError(f"{where} ('{name}') gives {' and '.join(transforms)}; at most one transform")
    key = transforms[0] if transforms else None
    transform = _transform(key, value[key], dtype, f"{where}.{key}") if key else None
    if dtype == "string" and not isinstance(transform, (Ordinal, OneHot)):
        raise PreprocessError(f"{where} ('{name}') is a string column without ordinal or one_hot categories")
    missing = _fill(value["missing"], dtype, f"{where}.missing") if "missing" in value else None
    return Column(name, dtype, transform, missing)


def _transform(key: str, value: Any, dtype: str, where: str) -> Transform:
    block = f.mapping(value, where)
    allowed = {"standard": {"mean", "std"}, "min_max": {"min", "max"}}.get(key, {"categories", "unknown"})
    unknown = set(block) - allowed
    if unknown:
        raise PreprocessError(f"{where} has unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    if key in ("standard", "min_max") and dtype == "string":
        raise PreprocessError(f"{where}: a string column cannot be scaled; give it categories")
    if key == "standard":
        mean, std = f.number(block.get("mean"), f"{where}.mean"), f.number(block.get("std"), f"{where}.std")
        if std == 0:
            raise PreprocessError(f"{where}.std is 0; a constant column's std is 1 (as scikit-learn keeps it)")
        return Standard(mean, std)
    if key == "min_max":
        low, high = f.number(block.get("min"), f"{where}.min"), f.number(block.get("max"), f"{where}.max")
        if low == high:
            raise PreprocessError(f"{where}: min equals max ({low:g}); the scaling divides by max - min")
        return MinMax(low, high)
    categories = _categories(block.get("categories"), dtype, f"{where}.categories")
    policy = block.get("unknown", "error")
    if key == "one_hot":
        if policy not in ("error", "ignore"):
            raise PreprocessError(f"{where}.unknown is {str(policy)[:40]!r}; expected error or ignore")
        return OneHot(categories, policy == "ignore")
    if policy == "error":
        return Ordinal(categories)
    return Ordinal(categories, f.number(policy, f"{where}.unknown (error, or the value an unlisted category takes)"))


def _categories(value: Any, dtype: str, where: str) -> tuple[Value, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_CATEGORIES:
        raise PreprocessError(f"{where} must list 1 to {MAX_CATEGORIES} categories")
    out = tuple(_typed(v, dtype, where) for v in value)
    if len(set(out)) != len(out):
        raise PreprocessError(f"{where} lists a category twice")
    return out


def _typed(value: Any, dtype: str, where: str) -> Value:
    """A manifest value (a category, a fill) as the column's dtype holds it."""
    if dtype == "string":
        if not isinstance(value, str) or len(value) > MAX_NAME:
            raise PreprocessError(f"{where}: {str(value)[:40]!r} is not a string of at most {MAX_NAME} characters")
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
    if value is None or value == "error":
        return Fill()
    if isinstance(value, dict):
        if set(value) != {"fill"}:
            raise PreprocessError(f"{where} is a mapping; expected {{fill: value}}")
        value = value["fill"]
    if not isinstance(value, (str, int, float, bool)):
        raise PreprocessError(f"{where} is {str(value)[:40]}; expected error or a fill value")
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


def _tolerance(prep: dict[str, Any]) -> float:
    value = prep.get("tolerance")
    if value is None:
        return DEFAULT_TOLERANCE
    tolerance = f.number(value, "preprocessing.tolerance")
    if tolerance < 0:
        raise PreprocessError(f"preprocessing.tolerance is {tolerance:g}; expected a number >= 0")
    return tolerance
