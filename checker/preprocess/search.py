"""The bounded search for the one edit of the declared preprocessing that explains a stored tensor.

Each input kind yields its alternatives (image/explain.py, text/explain.py, audio/explain.py), the likeliest
first; the first that reproduces the stored tensor within tolerance explains it. The search is bounded: each
kind yields at most 64 neighbours, and a time bound per mismatch stops it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from checker.preprocess.difference import difference
from checker.preprocess.errors import PreprocessError


@dataclass(frozen=True)
class Alternative:
    description: str  # completes "the stored tensor matches the declared preprocessing ..."
    build: Callable[[], np.ndarray]
    tolerance: float
    also: tuple[int, str] | None = None  # one of a run of equivalent edits (Neighbour.also)
    relative: bool = False  # the tolerance is relative to the stored value's magnitude (tabular features)


# Past this, an explanation search gives up and says where the tensors differ.
TIME_BOUND_SECONDS = 10.0


@dataclass(frozen=True)
class Search:
    """What an explanation search found: the alternative that explains the stored tensor, or none; and, when
    the time bound cut it short, how many alternatives it had tried (the verdict must not read as if all were)."""

    found: str | None = None
    stopped_after: int | None = None
    bound_s: float = 0.0  # the time bound that stopped it


def explain(alternatives: Iterable[Alternative], stored: np.ndarray, first: bool = False) -> Search:
    clock = _Clock(time.monotonic() + TIME_BOUND_SECONDS)
    pending = iter(alternatives)
    for tried, alt in enumerate(pending):
        if clock.expired():
            return Search(stopped_after=tried, bound_s=TIME_BOUND_SECONDS)
        if clock.reproduces(alt, stored, first):
            return Search(found=alt.description + _also(alt, pending, stored, first, clock))
    return Search()


@dataclass
class _Clock:
    """The search's time bound. A build that imports a library (torch takes seconds to import) does not count
    against it: the bound is on the search, and a library is imported once per run."""

    deadline: float

    def expired(self) -> bool:
        return time.monotonic() > self.deadline

    def reproduces(self, alt: Alternative, stored: np.ndarray, first: bool) -> bool:
        modules, started = len(sys.modules), time.monotonic()
        try:
            tensor = alt.build()
        except PreprocessError:
            return False  # this variation cannot be built (e.g. no pad token); try the next
        finally:
            if len(sys.modules) > modules:
                self.deadline += time.monotonic() - started
        return tensor.shape == stored.shape and difference(tensor, stored, alt.tolerance, first, alt.relative) is None


def _also(alt: Alternative, pending: Iterator[Alternative], stored: np.ndarray, first: bool, clock: _Clock) -> str:
    """The other edits of `alt`'s run that reproduce the stored tensor too (another library that agrees)."""
    if alt.also is None:
        return ""
    words = []
    for other in pending:
        if other.also is None or other.also[0] != alt.also[0] or clock.expired():
            break
        if clock.reproduces(other, stored, first):
            words.append(f"`{other.also[1]}`")
    return f"; {' or '.join(words)} reproduces it as well" if words else ""


# What a message says when no alternative of an image or a text input explains the difference.
UNEXPLAINED = (
    "no single usual mistake explains it (for images: no one edit of the declared steps, i.e. two adjacent "
    "steps swapped, a step left out or added, one parameter or the pad value changed, nor a letterbox or "
    "another layout; for text: template, special tokens, padding, truncation)"
)
