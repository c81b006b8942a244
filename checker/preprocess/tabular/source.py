"""A case's raw rows and the tabular input they make: one item of N per data row."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from checker.preprocess.errors import PreprocessError
from checker.preprocess.kind import Target
from checker.preprocess.layout import cast, numpy_dtype
from checker.preprocess.tabular.build import column_values, features
from checker.preprocess.tabular.rows import Table
from checker.preprocess.tabular.spec import Column, TabularSpec, Value


@dataclass
class TabularSource:
    spec: TabularSpec
    table: Table
    target: Target
    # A column's parsed cells by what parsing depends on: every alternative of an explanation reuses them.
    _parsed: dict[tuple[str, str, Any], list[Value]] = field(default_factory=dict)

    def values(self, column: Column, table: Table) -> list[Value]:
        key = (column.name, column.dtype, column.missing)
        if key not in self._parsed:
            self._parsed[key] = column_values(column, table)
        return self._parsed[key]

    @property
    def tolerance(self) -> float:
        return self.spec.tolerance  # relative: times max(1, |stored|) (the kind's relative_tolerance)

    def matrix(self, spec: TabularSpec | None = None) -> np.ndarray:
        """The rows x features matrix, in float64, before the input's dtype."""
        return features(spec or self.spec, self.table, self.values)

    def tensor(self, spec: TabularSpec | None = None) -> np.ndarray:
        return arrange(self.matrix(spec), self.target)

    def build(self) -> dict[str, np.ndarray]:
        return {self.target.name: self.tensor()}


def has_batch(target: Target) -> bool:
    """Whether the input has an axis N of rows: its layout says so, else any shape but a rank-1 one."""
    if isinstance(target.layout, str):
        return "N" in target.layout
    return not (isinstance(target.shape, list) and len(target.shape) == 1)


def arrange(matrix: np.ndarray, target: Target) -> np.ndarray:
    """[N, features], or [features] for an input without N (which takes exactly one row), in its dtype."""
    shape, layout = target.shape, target.layout
    rank = len(shape) if isinstance(shape, list) else 2
    if has_batch(target):
        if rank != 2 or (isinstance(layout, str) and layout not in ("NF", "NC")):
            raise PreprocessError(
                f"input '{target.name}' is {_described(shape, layout)}; a tabular input is [N, features] or [features]"
            )
        out = matrix
    else:
        if rank != 1:
            raise PreprocessError(
                f"input '{target.name}' is {_described(shape, layout)}; a tabular input without N is [features]"
            )
        if matrix.shape[0] != 1:
            raise PreprocessError(
                f"input '{target.name}' has no batch axis N, so a raw file holds exactly one row; this one has "
                f"{matrix.shape[0]}"
            )
        out = matrix[0]
    return cast(out, numpy_dtype(target.dtype))


def _described(shape: Any, layout: Any) -> str:
    return f"shape {shape}" + (f" with layout {layout}" if isinstance(layout, str) else "")
