"""Per-case figures for each check: pure NumPy on one actual and one expected array; and the rule kinds' registry.

Every check reduces a case to one figure, so a rule can report how far the worst case missed and which
threshold would just have passed. Figures are finite floats: the report is JSON, which has no NaN or infinity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from checker.manifest.model import rules as kinds

# SQNR of identical arrays is infinite; the report caps it so it stays a JSON number.
SQNR_CAP_DB = 200.0
# Stand-ins for matching infinities in the ranking checks: they keep the order and stay finite.
RANKING_BIG = 1e300
CHUNK = 1 << 15  # elements per slice of the element-wise reductions

Params = Mapping[str, Any]


class Pair:
    """One actual and one expected array of the same shape, and the reductions the checks draw from them.

    The element-wise reductions run over slices of CHUNK elements through two reused buffers: a large output
    costs neither a full-size temporary per step (each one page-faulted afresh) nor that much extra memory.
    Several rules usually judge the same output; each reduction is computed once per case and kept.
    """

    def __init__(self, actual: np.ndarray, expected: np.ndarray) -> None:
        self.a, self.e = np.asarray(actual), np.asarray(expected)
        self._excess: dict[float, float] = {}

    @cached_property
    def a64(self) -> np.ndarray:
        return np.asarray(self.a, dtype=np.float64)

    @cached_property
    def e64(self) -> np.ndarray:
        return np.asarray(self.e, dtype=np.float64)

    @cached_property
    def work(self) -> np.dtype[Any]:
        """The precision of element-wise differences: NumPy's own for float32/float64, at least float32."""
        floats = self.a.dtype.kind == "f" and self.e.dtype.kind == "f"
        return np.result_type(self.a.dtype, self.e.dtype, np.float32) if floats else np.dtype(np.float64)

    def _slices(self, dtype: np.dtype[Any]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """|a - e| and |e| slice by slice, in `dtype`, written into two reused buffers."""
        a, e = self.a.reshape(-1), self.e.reshape(-1)
        diff, mag = np.empty(min(CHUNK, a.size), dtype), np.empty(min(CHUNK, a.size), dtype)
        for start in range(0, a.size, CHUNK):
            part_a, part_e = a[start : start + CHUNK], e[start : start + CHUNK]
            d, m = diff[: part_a.size], mag[: part_a.size]
            np.subtract(part_a, part_e, out=d, dtype=dtype)
            np.abs(d, out=d)
            np.abs(part_e, out=m, dtype=dtype)
            yield d, m

    @cached_property
    def diff_stats(self) -> tuple[float, float]:
        """The largest and the mean |a - e|."""
        top, total = 0.0, 0.0
        for d, _ in self._slices(self.work):
            top, total = max(top, float(d.max())), total + float(d.sum(dtype=np.float64))
        return top, total / max(self.a.size, 1)

    def excess(self, rtol: float) -> float:
        """max(|a - e| - rtol*|e|) over the elements (the smallest atol that passes at this rtol)."""
        if rtol not in self._excess:
            top = -math.inf
            for d, m in self._slices(self.work):
                m *= rtol
                np.subtract(d, m, out=d)
                top = max(top, float(d.max()))
            self._excess[rtol] = top
        return self._excess[rtol]

    @cached_property
    def sqnr(self) -> float:
        """20*log10(||e|| / ||a - e||), clamped to +-SQNR_CAP_DB; identical arrays give the cap."""
        scale = 0.0
        for d, m in self._slices(np.dtype(np.float64)):
            scale = max(scale, float(d.max()), float(m.max()))
        if scale == 0.0 or not math.isfinite(scale):  # dividing by it keeps the squared norms finite
            return SQNR_CAP_DB if scale == 0.0 else -SQNR_CAP_DB
        noise, signal = 0.0, 0.0
        for d, m in self._slices(np.dtype(np.float64)):
            d /= scale
            m /= scale
            noise, signal = noise + float(np.dot(d, d)), signal + float(np.dot(m, m))
        if noise == 0.0 or signal == 0.0:
            return SQNR_CAP_DB if noise == 0.0 else -SQNR_CAP_DB
        db = 10.0 * (math.log10(signal) - math.log10(noise))
        return max(-SQNR_CAP_DB, min(SQNR_CAP_DB, db))


Figure = Callable[[Pair, Params], float]


@dataclass(frozen=True)
class Check:
    """One kind of check: its block in the manifest model (its parameters, their defaults and bounds), which
    parameter is the threshold, which way it points, and how its figure is measured and worded."""

    model: type[kinds.RuleBase]
    threshold_key: str | None  # None: the threshold is fixed (exact: 0 differing elements)
    direction: str  # "max": the figure must be <= the threshold; "min": >= it
    figure: Figure
    wording: str  # how the worst case's figure reads: {v} is the figure, {t} the threshold, and the parameters
    # Which way each parameter makes the rule easier to pass: "higher" (a max, a tolerance, a larger k),
    # "lower" (a min), or None (a choice such as the axis, neither looser nor tighter). Every parameter of
    # the kind is declared, so `checker report diff` can say whether an edited rule was loosened.
    looser: dict[str, str | None]
    ranking: bool = False  # compares positions of the largest entries rather than element values
    numeric: bool = True  # needs numbers (exact also compares strings and booleans)

    @property
    def name(self) -> str:
        return self.model.TAG

    @property
    def params(self) -> dict[str, kinds.Param]:
        return kinds.parameters(self.model)

    @property
    def defaults(self) -> dict[str, Any]:
        """The parameters a rule takes when it does not state them."""
        return {p.name: p.default for p in self.params.values() if p.default is not None}

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params.values() if p.required)

    @property
    def optional(self) -> tuple[str, ...]:
        """Parameters taken when stated, absent from the report otherwise."""
        return tuple(p.name for p in self.params.values() if not p.required and p.default is None)

    @property
    def task(self) -> bool:
        """Judges the application's answer (a case's `label`) over the whole set: compare.task."""
        return issubclass(self.model, kinds.TaskRule)

    def threshold(self, params: Params) -> float:
        return 0.0 if self.threshold_key is None else float(params[self.threshold_key])

    def passes(self, value: float, params: Params) -> bool:
        limit = self.threshold(params)
        return value <= limit if self.direction == "max" else value >= limit


def allclose_figure(x: Pair, p: Params) -> float:
    """The smallest atol that passes at the rule's rtol: max(|a - e| - rtol*|e|), floored at 0.

    NumPy's definition, asymmetric and additive (|a - e| <= atol + rtol*|e| for every element), holds exactly
    when this figure is <= atol, up to rounding; like numpy.allclose, float32 outputs are compared in float32.
    """
    return max(0.0, x.excess(float(p["rtol"]))) if x.a.size else 0.0


def max_abs_figure(x: Pair, p: Params) -> float:
    return x.diff_stats[0]


def mean_abs_figure(x: Pair, p: Params) -> float:
    return x.diff_stats[1]


def _items(x: np.ndarray, batch_axis: int = 0) -> np.ndarray:
    """Batch items as rows: `batch_axis` is the batch when there is one (rank >= 2).

    A CTC recogniser's [T, N, C] output has its batch on axis 1: with axis 0 each row would be a time step.
    """
    if x.ndim < 2:
        return x.reshape(1, x.size)
    x = np.moveaxis(x, batch_axis, 0)
    # Sizes, not -1: NumPy cannot infer an axis beside a zero-length one.
    return x.reshape(x.shape[0], math.prod(x.shape[1:]))


def batch_axis(p: Params) -> int:
    """The rule's `batch_axis` (0 unless stated)."""
    return int(p.get("batch_axis", 0))


def cosine_figure(x: Pair, p: Params) -> float:
    """The lowest cosine similarity over batch items. Two zero vectors agree (1); one alone does not (0)."""
    ra, re_ = _items(x.a64, batch_axis(p)), _items(x.e64, batch_axis(p))
    if ra.shape[0] == 0:
        return 1.0
    # Scaling each row by its largest magnitude keeps the products finite for huge values.
    ra = ra / np.maximum(np.abs(ra).max(axis=1, keepdims=True, initial=0.0), np.finfo(np.float64).tiny)
    re_ = re_ / np.maximum(np.abs(re_).max(axis=1, keepdims=True, initial=0.0), np.finfo(np.float64).tiny)
    na, ne = np.linalg.norm(ra, axis=1), np.linalg.norm(re_, axis=1)
    dots = np.einsum("ij,ij->i", ra, re_)
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.where((na > 0) & (ne > 0), dots / (na * ne), np.where((na == 0) & (ne == 0), 1.0, 0.0))
    return float(np.clip(cos, -1.0, 1.0).min())


def sqnr_figure(x: Pair, p: Params) -> float:
    """20*log10(||e|| / ||a - e||) in dB, clamped to +-SQNR_CAP_DB (identical arrays give the cap)."""
    return x.sqnr


def sqnr_db(a: np.ndarray, e: np.ndarray) -> float:
    return Pair(a, e).sqnr


def class_rows(x: np.ndarray, axis: int) -> np.ndarray:
    """Items as rows and the class axis as columns."""
    return np.moveaxis(x.astype(np.float64), axis, -1).reshape(-1, x.shape[axis])


def topk_agreement(a: np.ndarray, e: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Per item: True when some choice among tied entries makes both top-k sets equal.

    Entries strictly above the k-th largest value are in every top-k set; entries equal to it may be. The
    sets can be made equal exactly when everything certainly in either set may be in both, at most k entries
    are certainly in, and at least k entries may be in both.
    """
    ra, re_ = class_rows(a, axis), class_rows(e, axis)
    kth_a = -np.partition(-ra, k - 1, axis=1)[:, k - 1 : k]
    kth_e = -np.partition(-re_, k - 1, axis=1)[:, k - 1 : k]
    sure = (ra > kth_a) | (re_ > kth_e)
    both = (ra >= kth_a) & (re_ >= kth_e)
    agree: np.ndarray = np.all(~sure | both, axis=1) & (sure.sum(axis=1) <= k) & (both.sum(axis=1) >= k)
    return agree


def _per_item(x: np.ndarray, class_axis: int, p: Params) -> tuple[np.ndarray, int]:
    """`x` with the stated `batch_axis` moved first (so item rows come in batch order), and the class axis.

    Without `batch_axis` every position outside the class axis is an item, as it always was.
    """
    if "batch_axis" not in p or x.ndim < 2:
        return x, class_axis
    batch, cls = batch_axis(p) % x.ndim, class_axis % x.ndim
    return np.moveaxis(x, batch, 0), cls + (1 if cls < batch else 0)


def _item_count(x: np.ndarray, p: Params) -> int:
    """How many items the rows of class_rows make: positions along `batch_axis`, else every row."""
    return int(x.shape[batch_axis(p)]) if "batch_axis" in p and x.ndim >= 2 else 0


def topk_figure(x: Pair, p: Params) -> float:
    """The share of items whose top-k sets agree; with `batch_axis`, an item agrees when every one of its
    positions does (a CTC sequence decodes alike only when each time step ranks alike)."""
    a, axis = _per_item(x.a, int(p["axis"]), p)
    e, _ = _per_item(x.e, int(p["axis"]), p)
    agree = topk_agreement(a, e, int(p["k"]), axis)
    items = _item_count(x.a, p)
    if items and agree.size:
        return float(np.mean(agree.reshape(items, -1).all(axis=1)))
    return float(agree.mean()) if agree.size else 1.0


def apply_scores(x: np.ndarray, how: str) -> np.ndarray:
    """softmax or sigmoid along the last axis, computed so that no intermediate overflows."""
    if how == "softmax":
        z = np.exp(x - x.max(axis=-1, keepdims=True))
        soft: np.ndarray = z / z.sum(axis=-1, keepdims=True)
        return soft
    if how == "sigmoid":
        z = np.exp(-np.abs(x))
        sig: np.ndarray = np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))
        return sig
    return x


def score_drift_figure(x: Pair, p: Params) -> float:
    """The largest change, over items, of the score of the expected top class (every tied one counts)."""
    how = str(p["apply"])
    pa = apply_scores(class_rows(x.a, int(p["axis"])), how)
    pe = apply_scores(class_rows(x.e, int(p["axis"])), how)
    if pe.size == 0:
        return 0.0
    top = pe == pe.max(axis=1, keepdims=True)
    return float(np.where(top, np.abs(pa - pe), 0.0).max())


def task_figure(x: Pair, p: Params) -> float:
    """Task rules need each case's label, which a pair of arrays lacks: compare.task measures them."""
    raise TypeError("a task rule is measured by checker.compare.task")


def exact_figure(x: Pair, p: Params) -> float:
    """The number of differing elements."""
    return float(np.count_nonzero(x.a != x.e))


# The parameter every rule kind shares, and which way loosens it: a smaller share of cases that must pass.
RULE_LOOSER: dict[str, str | None] = {"min_pass_rate": "lower"}

CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        Check(
            kinds.AllClose, "atol", "max", allclose_figure,
            wording="measured atol {v:.4g} at rtol {rtol:g} (threshold atol {t:g})",
            looser={"atol": "higher", "rtol": "higher"},
        ),
        Check(
            kinds.MaxAbs, "max", "max", max_abs_figure,
            wording="differs by up to {v:.4g} (max {t:g})", looser={"max": "higher"},
        ),
        Check(
            kinds.MeanAbs, "max", "max", mean_abs_figure,
            wording="differs by {v:.4g} on average (max {t:g})", looser={"max": "higher"},
        ),
        Check(
            kinds.Cosine, "min", "min", cosine_figure,
            wording="has a cosine similarity of {v:.6g} (min {t:g})",
            looser={"min": "lower", "batch_axis": None},
        ),
        Check(
            kinds.Sqnr, "min_db", "min", sqnr_figure,
            wording="has an SQNR of {v:.4g} dB (min {t:g} dB)", looser={"min_db": "lower"},
        ),
        Check(
            kinds.TopK, "min_agreement", "min", topk_figure,
            wording="agrees on the top {k} for a share of {v:.4g} of its items (min {t:g})", ranking=True,
            # Equal top-k sets get no easier with a larger k: k is a change, neither looser nor tighter.
            looser={"k": None, "axis": None, "min_agreement": "lower", "batch_axis": None},
        ),
        Check(
            kinds.ScoreDrift, "max", "max", score_drift_figure,
            wording="changed the top score by {v:.4g} (max {t:g})", ranking=True,
            looser={"max": "higher", "axis": None, "apply": None, "batch_axis": None},
        ),
        Check(
            kinds.Accuracy, "min", "min", task_figure, ranking=True,
            wording="has a top-{k} accuracy of {v:.4g} against the labels (min {t:g})",
            looser={"k": "higher", "axis": None, "min": "lower"},
        ),
        Check(
            kinds.AccuracyDrop, "max", "max", task_figure, ranking=True,
            wording="loses {v:.4g} of top-{k} accuracy against the labels (max {t:g})",
            # A drop in top-k accuracy need not shrink as k grows: k is a change.
            looser={"k": None, "axis": None, "relative": None, "max": "higher"},
        ),
        Check(
            kinds.Exact, None, "max", exact_figure,
            wording="differs at {v:.0f} element(s) (they must be equal)", numeric=False, looser={},
        ),
    )
}  # fmt: skip
