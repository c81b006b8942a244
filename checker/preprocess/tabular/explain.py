"""Naming the one edit of a tabular input's declared columns that reproduces the stored tensor: two columns
swapped, a column left out or an unlisted file column put in, two categories of a list swapped, every scaler
dropped, doubled or added (fitted from the case's rows).

The columns and categories tried are those where the rebuilt features and the stored ones disagree, so the
search stays small on a wide table; every alternative is rebuilt from the rows already read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from itertools import combinations

import numpy as np

from checker.preprocess.errors import PreprocessError
from checker.preprocess.search import Alternative
from checker.preprocess.tabular.source import TabularSource, arrange
from checker.preprocess.tabular.spec import Column, Fill, MinMax, OneHot, Ordinal, Standard, TabularSpec

MAX_ALTERNATIVES = 64
MAX_SUSPECTS = 10  # the categories of one column whose pairs are tried: 45 pairs at most

UNEXPLAINED = (
    "no single usual mistake explains it (two columns swapped, a column left out or an unlisted one put in, "
    "two categories swapped, every scaler dropped, applied twice or added)"
)


def tabular_alternatives(src: TabularSource, stored: np.ndarray) -> Iterator[Alternative]:
    for count, alt in enumerate(_Edits(src, stored).all()):
        if count >= MAX_ALTERNATIVES:
            return
        yield alt


class _Edits:
    def __init__(self, src: TabularSource, stored: np.ndarray) -> None:
        self.src = src
        self.spec = src.spec
        self.declared = src.matrix()
        rows = self.declared.shape[0]
        flat = stored.astype(np.float64)
        self.stored = flat.reshape(rows, -1) if rows and flat.size % rows == 0 else None
        self.starts = np.cumsum([0, *(c.width for c in self.spec.columns)])

    def alt(self, description: str, spec: TabularSpec) -> Alternative:
        return Alternative(description, lambda: self.src.tensor(spec), self.spec.tolerance, relative=True)

    def all(self) -> Iterator[Alternative]:
        yield from self.scalers()
        yield from self.swapped_columns()
        yield from self.swapped_categories()
        yield from self.left_out()
        yield from self.put_in()

    # Where the declared features and the stored ones disagree, by column (same width only).

    def bad_features(self) -> np.ndarray | None:
        if self.stored is None or self.stored.shape != self.declared.shape:
            return None
        diff = np.abs(self.declared - self.stored)
        with np.errstate(invalid="ignore"):
            over = ~(diff <= self.spec.tolerance * np.maximum(1.0, np.abs(self.stored)))
        return np.asarray(over.any(axis=0))

    def bad_columns(self) -> list[int] | None:
        """The columns whose features differ from the stored ones; None when the widths differ."""
        bad = self.bad_features()
        if bad is None:
            return None
        return [i for i in range(len(self.spec.columns)) if bad[self.starts[i] : self.starts[i + 1]].any()]

    def swapped_columns(self) -> Iterator[Alternative]:
        """A swap moves two columns and keeps the width: tried only when at most two columns differ."""
        bad, cols = self.bad_columns(), self.spec.columns
        if bad is None or not 1 <= len(bad) <= 2:
            return
        pairs = [tuple(bad)] if len(bad) == 2 else [tuple(sorted((bad[0], k))) for k in range(len(cols)) if k != bad[0]]
        for i, j in pairs[:MAX_ALTERNATIVES]:
            order = list(cols)
            order[i], order[j] = order[j], order[i]
            words = f"when `{cols[i].name}` and `{cols[j].name}` are swapped in `columns`"
            yield self.alt(words, self.spec.with_columns(order))

    def swapped_categories(self) -> Iterator[Alternative]:
        """Two categories swapped change one column: tried only when one categorical column differs."""
        bad, features = self.bad_columns(), self.bad_features()
        if bad is None or len(bad) != 1 or features is None:
            return
        (i,) = bad
        column = self.spec.columns[i]
        t = column.transform
        if not isinstance(t, (Ordinal, OneHot)):
            return
        if isinstance(t, OneHot):
            block = features[self.starts[i] : self.starts[i + 1]]
            suspects = [k for k in range(t.width) if block[k]]
        else:
            suspects = list(range(len(t.categories)))
        for a, b in combinations(suspects[:MAX_SUSPECTS], 2):
            cats = list(t.categories)
            cats[a], cats[b] = cats[b], cats[a]
            words = (
                f"when `{t.categories[a]}` and `{t.categories[b]}` are swapped in the categories of "
                f"`{column.name}` ({t.key})"
            )
            changed = replace(column, transform=replace(t, categories=tuple(cats)))
            yield self.alt(words, self._with_column(i, changed))

    def _with_column(self, i: int, column: Column) -> TabularSpec:
        cols = list(self.spec.columns)
        cols[i] = column
        return self.spec.with_columns(cols)

    def scalers(self) -> Iterator[Alternative]:
        graph = self.src.target.scaled_in_graph
        twice = f"; the graph scales this input itself, with {graph}: a scaler applied twice" if graph else ""
        for kind, key in ((Standard, "standard"), (MinMax, "min_max")):
            if any(isinstance(c.transform, kind) for c in self.spec.columns):
                cols = self.spec.columns
                dropped = [replace(c, transform=None) if isinstance(c.transform, kind) else c for c in cols]
                yield self.alt(f"without every `{key}`{twice}", self.spec.with_columns(dropped))
        if any(isinstance(c.transform, (Standard, MinMax)) for c in self.spec.columns):
            yield Alternative(
                "with every scaler (`standard`, `min_max`) applied twice",
                lambda: self._scaled_twice(),
                self.spec.tolerance,
                relative=True,
            )
        fitted = self._fitted_standard()
        if fitted is not None:
            names = [c.name for c in fitted.columns if isinstance(c.transform, Standard)]
            where = f"{len(names)} unscaled columns" if len(names) > 3 else ", ".join(f"`{n}`" for n in names)
            also = f"; the graph scales this input too, with {graph}: a scaler applied twice" if graph else ""
            yield self.alt(
                f"with `standard` added on {where}, fitted from the case's {self.declared.shape[0]} rows{also}",
                fitted,
            )

    def _scaled_twice(self) -> np.ndarray:
        once = self.src.matrix()
        twice = once.copy()
        for i, c in enumerate(self.spec.columns):
            t, at = c.transform, int(self.starts[i])
            if isinstance(t, Standard):
                twice[:, at] = (once[:, at] - t.mean) / t.std
            elif isinstance(t, MinMax):
                twice[:, at] = (once[:, at] - t.min) / (t.max - t.min)
        return arrange(twice, self.src.target)

    def _fitted_standard(self) -> TabularSpec | None:
        """`standard` on every numeric column without a transform, with the mean and (population) std of the
        case's own rows, as StandardScaler fits them; None with fewer than two rows or no such column."""
        if self.declared.shape[0] < 2:
            return None
        cols, changed = [], False
        for c in self.spec.columns:
            if c.transform is None and c.dtype in ("float64", "float32", "int64"):
                try:
                    x = np.asarray([float(v) for v in self.src.values(c, self.src.table)])
                except PreprocessError:
                    return None
                std = float(x.std())
                c = replace(c, transform=Standard(float(x.mean()), std if std > 0 else 1.0))
                changed = True
            cols.append(c)
        return self.spec.with_columns(cols) if changed else None

    def _stored_width(self) -> int | None:
        return None if self.stored is None else int(self.stored.shape[1])

    def _first_bad(self) -> int:
        """The first feature where the stored tensor departs from the declared one (over the common width)."""
        assert self.stored is not None
        width = min(self.stored.shape[1], self.declared.shape[1])
        diff = np.abs(self.declared[:, :width] - self.stored[:, :width])
        with np.errstate(invalid="ignore"):
            bad = ~(diff <= self.spec.tolerance * np.maximum(1.0, np.abs(self.stored[:, :width])))
        cols = np.flatnonzero(bad.any(axis=0))
        return int(cols[0]) if cols.size else width

    def left_out(self) -> Iterator[Alternative]:
        width = self._stored_width()
        if width is None or width >= self.declared.shape[1]:
            return
        first = self._first_bad()
        cols = self.spec.columns
        # The column left out starts at or before the first feature that differs; the nearest first.
        order = sorted(range(len(cols)), key=lambda i: (self.starts[i] > first, abs(int(self.starts[i]) - first)))
        for i in order:
            if self.declared.shape[1] - cols[i].width == width:
                rest = [c for j, c in enumerate(cols) if j != i]
                yield self.alt(f"with `{cols[i].name}` left out of `columns`", self.spec.with_columns(rest))

    def put_in(self) -> Iterator[Alternative]:
        width = self._stored_width()
        if width is None or width != self.declared.shape[1] + 1:
            return
        listed = {c.name for c in self.spec.columns}
        first = self._first_bad()
        at = (
            int(np.searchsorted(self.starts[:-1], first, side="right")) - 1
            if first < self.starts[-1]
            else len(self.spec.columns)
        )
        at = max(at, 0)
        cols = list(self.spec.columns)
        for name in self.src.table.header:
            if name in listed:
                continue
            fill = self.spec.missing if isinstance(self.spec.missing.value, (int, float)) else Fill()
            extra = Column(name, "float64", None, fill)
            where = f"before `{cols[at].name}`" if at < len(cols) else "at the end"
            spec = self.spec.with_columns([*cols[:at], extra, *cols[at:]])
            yield self.alt(f"with the file's unlisted column `{name}` put in `columns` {where}", spec)
