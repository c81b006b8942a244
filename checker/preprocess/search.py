"""The bounded search for the single edits of the declared preprocessing that explain a stored tensor.

Each input kind yields its alternatives (image/explain.py, text/explain.py, audio/explain.py), the likeliest
first. Every alternative that reproduces the stored tensor within tolerance is a fit, and all of them are
reported, ranked by how exactly they reproduce it: the mean absolute difference from the stored tensor first,
then the largest, then the likeliest first. Two edits often both fit within a tolerance (a grey conversion
moved before a resize, or another library's filter); the exact one is the explanation and the other is listed
as a weaker fit, so that the same mistake in two cases is explained the same way. The search is bounded: each
kind yields at most 64 neighbours, and a time bound per mismatch stops it.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from checker.preprocess.difference import difference
from checker.preprocess.errors import PreprocessError


@dataclass(frozen=True)
class Alternative:
    description: str  # completes "the stored tensor matches the declared preprocessing ..."
    build: Callable[[], np.ndarray]
    tolerance: float
    relative: bool = False  # the tolerance is relative to the stored value's magnitude (tabular features)
    # The alternatives that make a second edit on top of this one (their descriptions say both), for the
    # search's second round; None where the kind offers none.
    then: Callable[[], Iterable[Alternative]] | None = None


@dataclass(frozen=True)
class Fit:
    """An alternative that reproduces the stored tensor, and how exactly (in the stored tensor's units)."""

    description: str
    mean: float  # mean absolute difference from the stored tensor
    largest: float
    order: int  # its place among the alternatives: the likelier first among equal fits
    exact: bool = False  # equal but for float32 rounding
    same: tuple[str, ...] = ()  # later alternatives that build the very same tensor (libraries that agree)
    edits: int = 1  # 2 for an edit on top of a near single edit

    @property
    def rank(self) -> tuple[float, float, int]:
        return (0.0 if self.exact else self.mean, 0.0 if self.exact else self.largest, self.order)

    def measured(self) -> str:
        how = "exactly" if self.exact else f"mean difference {self.mean:.3g}, largest {self.largest:.3g}"
        if self.same:
            shown = "; ".join(self.same[:SHOWN_SAME]) + ("; …" if len(self.same) > SHOWN_SAME else "")
            how += f"; the very same tensor {shown}"
        return how


# Past this much of the process's CPU time, an explanation search gives up and says where the tensors differ.
# CPU time, not the wall clock: every fit is searched for, and a machine busy with other work must not cut the
# search short and change the explanation.
TIME_BOUND_SECONDS = 10.0
SECOND_EDIT_SECONDS = 5.0  # the second round's own bound, after a first round that found nothing
SECOND_EDIT_FROM = 6  # the nearest single edits a second edit is tried on
SHOWN_FITS = 4  # fits a message names after the best
SHOWN_SAME = 2  # alternatives named for one tensor
EXACT_RELATIVE = 1e-6  # a fit this close to the stored tensor's largest magnitude reproduces it exactly


@dataclass(frozen=True)
class Search:
    """What an explanation search found: every alternative that explains the stored tensor, the most exact first
    (none: nothing explains it); and, when the time bound cut it short, how many alternatives it had tried (the
    verdict must not read as if all were)."""

    fits: tuple[Fit, ...] = ()
    stopped_after: int | None = None
    bound_s: float = 0.0  # the time bound that stopped it

    @property
    def found(self) -> str | None:
        """The best fit's words, with the others when several fit."""
        if not self.fits:
            return None
        best, rest = self.fits[0], self.fits[1:]
        if not rest:
            return best.description + (f" ({best.measured()})" if best.same else "")
        shown = "; ".join(f"{f.description} ({f.measured()})" for f in rest[:SHOWN_FITS])
        more = f"; and {len(rest) - SHOWN_FITS} more" if len(rest) > SHOWN_FITS else ""
        what = "single edits" if best.edits == 1 else "pairs of edits"
        return (
            f"{best.description} ({best.measured()}); {len(self.fits)} {what} reproduce it within the "
            f"tolerance, ranked by how exactly (the mean absolute difference from the stored tensor, then the "
            f"largest), this one first; the others: {shown}{more}"
        )


def explain(alternatives: Iterable[Alternative], stored: np.ndarray, first: bool = False) -> Search:
    clock = _Clock(time.process_time() + TIME_BOUND_SECONDS)
    found = _Found()
    near: list[tuple[float, int, Alternative]] = []  # the single edits that did not fit, by their remainder
    for tried, alt in enumerate(alternatives):
        if clock.expired():
            return Search(found.ranked(), stopped_after=tried, bound_s=TIME_BOUND_SECONDS)
        if alt.description in found.seen:
            continue  # the same words by another route (the shorthand and its steps): one fit
        measured = clock.measure(alt, stored, first, tried)
        if isinstance(measured, float):
            if alt.then is not None:
                near.append((measured, tried, alt))
        elif measured is not None:
            found.add(alt.description, *measured)
    if found.fits or not near:
        return Search(found.ranked())
    return Search(_second_round(near, stored, first, found))


def _second_round(
    near: list[tuple[float, int, Alternative]], stored: np.ndarray, first: bool, found: _Found
) -> tuple[Fit, ...]:
    """A second edit on each of the nearest single edits, the nearest first, within SECOND_EDIT_SECONDS."""
    clock = _Clock(time.process_time() + SECOND_EDIT_SECONDS)
    order = 0
    for _, __, base in sorted(near, key=lambda n: (n[0], n[1]))[:SECOND_EDIT_FROM]:
        assert base.then is not None
        for alt in base.then():
            if clock.expired():
                return found.ranked()
            order += 1
            if alt.description in found.seen:
                continue
            measured = clock.measure(alt, stored, first, order)
            if measured is not None and not isinstance(measured, float):
                fit, digest = measured
                found.add(alt.description, replace(fit, edits=2), digest)
    return found.ranked()


@dataclass
class _Found:
    """The fits so far, one per tensor (by the digest of what it builds), and the words already fitted."""

    fits: dict[bytes, Fit] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    def add(self, description: str, fit: Fit, digest: bytes) -> None:
        self.seen.add(description)
        if digest in self.fits:
            known = self.fits[digest]
            if not known.description.startswith(description):  # the same edit in fewer words says nothing
                self.fits[digest] = replace(known, same=(*known.same, description))
        else:
            self.fits[digest] = fit

    def ranked(self) -> tuple[Fit, ...]:
        return tuple(sorted(self.fits.values(), key=lambda f: f.rank))


@dataclass
class _Clock:
    """The search's time bound. A build that imports a library (torch takes seconds to import) does not count
    against it: the bound is on the search, and a library is imported once per run."""

    deadline: float

    def expired(self) -> bool:
        return time.process_time() > self.deadline

    def measure(
        self, alt: Alternative, stored: np.ndarray, first: bool, order: int
    ) -> tuple[Fit, bytes] | float | None:
        """The fit `alt` makes and its tensor's digest; else how far its tensor of the stored shape remains
        from the stored one (the mean absolute difference, or for token ids the share that differ); None
        when it cannot be built or makes another shape."""
        modules, started = len(sys.modules), time.process_time()
        try:
            tensor = alt.build()
        except PreprocessError:
            return None  # this variation cannot be built (e.g. no pad token); try the next
        finally:
            if len(sys.modules) > modules:
                self.deadline += time.process_time() - started
        if tensor.shape != stored.shape:
            return None
        with np.errstate(invalid="ignore", over="ignore"):
            gap = np.abs(tensor.astype(np.float64) - stored.astype(np.float64))
        if difference(tensor, stored, alt.tolerance, first, alt.relative) is not None:
            if first:
                return float(np.count_nonzero(gap)) / max(gap.size, 1)
            remainder = float(gap.mean()) if gap.size else 0.0
            return remainder if np.isfinite(remainder) else None
        largest = float(gap.max(initial=0.0))
        # Equal but for float32 rounding: a float64 path and a float32 one differ by a few ulps of the values.
        scale = float(np.abs(stored.astype(np.float64)).max(initial=1.0)) if stored.size else 1.0
        exact = largest <= EXACT_RELATIVE * max(scale, 1.0)
        fit = Fit(alt.description, float(gap.mean()) if gap.size else 0.0, largest, order, exact)
        return fit, hashlib.sha256(np.ascontiguousarray(tensor).tobytes()).digest()


# What a message says when no alternative of an image or a text input explains the difference.
UNEXPLAINED = (
    "no single usual mistake explains it, nor a second one on top of the nearest (for images: no one edit of "
    "the declared steps, i.e. two adjacent steps swapped, a step left out or added, one parameter, the resize's "
    "geometry or the pad value changed, nor a letterbox or another layout; for text: template, special tokens, "
    "a strip, lowercase or accents normalizer, padding, truncation)"
)
