"""From a table's rows to the feature matrix: each listed column parsed as its dtype, a missing cell filled or
refused, its one transform applied in float64, the columns side by side in the declared order."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from checker.preprocess.errors import PreprocessError
from checker.preprocess.tabular.rows import Cell, Table
from checker.preprocess.tabular.spec import Column, MinMax, OneHot, Ordinal, Standard, TabularSpec, Value

TRUE = ("true", "1", "yes")
FALSE = ("false", "0", "no")


# The feature matrix of one raw file, as float64: 2^24 values are 128 MiB (2^16 rows of 256 features).
MAX_VALUES = 1 << 24


Values = Callable[[Column, Table], list[Value]]


def features(spec: TabularSpec, table: Table, values: Values | None = None) -> np.ndarray:
    """The rows x features matrix, float64; a listed column the file lacks is an error naming it. `values`
    parses a column's cells (a source passes its cache, so the explanations parse each column once)."""
    if table.rows * spec.width > MAX_VALUES:
        raise PreprocessError(
            f"{table.name}: {table.rows} rows of {spec.width} features would make {table.rows * spec.width} "
            f"values; at most {MAX_VALUES}"
        )
    parse = values or column_values
    blocks = [encoded(c, parse(c, table), table) for c in spec.columns]
    return np.concatenate(blocks, axis=1) if blocks else np.zeros((table.rows, 0))


def column_values(column: Column, table: Table) -> list[Value]:
    """The column's cells parsed as its dtype, a missing one replaced by its fill value (or refused)."""
    cells = table.columns.get(column.name)
    if cells is None:
        shown = ", ".join(table.header[:20]) + (", ..." if len(table.header) > 20 else "")
        raise PreprocessError(f"{table.name} has no column '{column.name}' (its header: {shown})")
    out: list[Value] = []
    fill = column.missing.value if column.missing is not None else None
    for row, cell in enumerate(cells):
        try:
            value = parse_cell(cell, column.dtype)
        except _BadCell as e:
            raise PreprocessError(f"{table.where(row)}, column '{column.name}': {e}") from None
        if value is None:
            if fill is None:
                raise PreprocessError(
                    f"{table.where(row)}, column '{column.name}': the cell is missing and the preprocessing "
                    "refuses missing values (missing: error); give a fill value to replace it"
                )
            value = fill
        out.append(value)
    return out


def parse_cell(cell: Cell, dtype: str) -> Value | None:
    """A CSV text or a Parquet scalar as `dtype`; None for a missing cell (empty, or null)."""
    if cell is None or (isinstance(cell, str) and cell.strip() == ""):
        return None
    if dtype == "string":
        if not isinstance(cell, str):
            raise _bad(cell, dtype)
        return cell
    if isinstance(cell, str):
        return _parse_text(cell.strip(), dtype)
    if isinstance(cell, bool) or not isinstance(cell, (int, float)):
        if dtype == "bool" and isinstance(cell, bool):
            return cell
        raise _bad(cell, dtype)
    if isinstance(cell, float) and math.isnan(cell):
        return None  # a float NaN in a Parquet column is missing, as pandas reads it
    if dtype == "bool":
        raise _bad(cell, dtype)
    return int(cell) if dtype == "int64" and float(cell).is_integer() else _number(cell, dtype)


def _parse_text(text: str, dtype: str) -> Value | None:
    if dtype == "bool":
        low = text.lower()
        if low in TRUE or low in FALSE:
            return low in TRUE
        raise _bad(text, dtype)
    if dtype == "int64":
        try:
            return int(text)
        except ValueError:
            raise _bad(text, dtype) from None
    try:
        value = float(text)
    except ValueError:
        raise _bad(text, dtype) from None
    if math.isnan(value):
        return None  # "nan", "NaN": as pandas and numpy write a missing float
    return _number(value, dtype)


def _number(value: float | int, dtype: str) -> float | int:
    if dtype == "int64":
        raise _bad(value, dtype)
    out = float(value)
    if not math.isfinite(out):
        raise _bad(value, dtype)
    # A float32 column holds what float32 holds: the value the application's float32 array had.
    return float(np.float32(out)) if dtype == "float32" else out


class _BadCell(PreprocessError):
    """A cell that is not a value of its column's dtype; the caller adds the row and column."""


def _bad(cell: Any, dtype: str) -> _BadCell:
    return _BadCell(f"{str(cell)[:40]!r} is not a {dtype} value")


def encoded(column: Column, values: list[Value], table: Table) -> np.ndarray:
    """The column's features (rows x width) from its parsed values, by its transform."""
    t = column.transform
    if isinstance(t, (Ordinal, OneHot)):
        return _categorical(column, t, values, table)
    x = np.asarray([float(v) for v in values], dtype=np.float64)
    if isinstance(t, Standard):
        x = (x - t.mean) / t.std
    elif isinstance(t, MinMax):
        x = (x - t.min) / (t.max - t.min)
    return x[:, None]


def _categorical(column: Column, t: Ordinal | OneHot, values: list[Value], table: Table) -> np.ndarray:
    index = {c: i for i, c in enumerate(t.categories)}
    rows = len(values)
    out = np.zeros((rows, t.width), dtype=np.float64)
    for row, value in enumerate(values):
        at = index.get(value)
        if at is None:
            if isinstance(t, OneHot) and t.ignore_unknown:
                continue  # all zeros, as scikit-learn's handle_unknown="ignore"
            if isinstance(t, Ordinal) and t.unknown is not None:
                out[row, 0] = t.unknown
                continue
            shown = ", ".join(map(str, t.categories[:10])) + (", ..." if len(t.categories) > 10 else "")
            raise PreprocessError(
                f"{table.where(row)}, column '{column.name}': {str(value)[:40]!r} is not one of its categories "
                f"({shown}); an unlisted category is an error unless `unknown` says what it becomes"
            )
        if isinstance(t, OneHot):
            out[row, at] = 1.0
        else:
            out[row, 0] = at
    return out
