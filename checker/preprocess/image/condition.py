"""`when:` on a resize, crop or pad step: a condition on the size of the image as it enters the step.

PaddleOCR's text detector shrinks only images whose longer side exceeds 960 and pads only those whose sides
sum to less than 64; a condition says that in the manifest's words, and a step whose condition does not hold
passes the image on unchanged.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from checker.preprocess import fields as f
from checker.preprocess.errors import PreprocessError

MEASURES: dict[str, Callable[[int, int], int]] = {
    "height": lambda h, w: h,
    "width": lambda h, w: w,
    "longer_side": max,
    "shorter_side": min,
    "sum_of_sides": operator.add,
    "area": operator.mul,
}
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "gt": operator.gt,
    "ge": operator.ge,
    "lt": operator.lt,
    "le": operator.le,
}
# The other strictness of each comparison: `gt` <-> `ge`, `lt` <-> `le`.
STRICTNESS = {"gt": "ge", "ge": "gt", "lt": "le", "le": "lt"}
# No measure of an image the bounds admit reaches this (an area of MAX_SIDE x MAX_SIDE).
MAX_LIMIT = f.MAX_SIDE * f.MAX_SIDE


@dataclass(frozen=True)
class When:
    """Every comparison must hold: ((measure, comparison, limit), ...), in the order the manifest gives them."""

    tests: tuple[tuple[str, str, float], ...]

    def holds(self, h: int, w: int) -> bool:
        return all(COMPARISONS[op](MEASURES[measure](h, w), limit) for measure, op, limit in self.tests)

    def mapping(self) -> dict[str, dict[str, float]]:
        """As the manifest writes it: {measure: {comparison: limit, ...}, ...}."""
        out: dict[str, dict[str, float]] = {}
        for measure, op, limit in self.tests:
            out.setdefault(measure, {})[op] = _number(limit)
        return out

    def words(self) -> str:
        inner = ", ".join(
            f"{m}: {{{', '.join(f'{op}: {_shown(v)}' for op, v in ops.items())}}}" for m, ops in self.mapping().items()
        )
        return "{" + inner + "}"

    def edits(self) -> Iterator[When | None]:
        """The one-edit changes of this condition, in the spec's order: each limit one less and one more, each
        comparison's strictness switched, each comparison dropped (None: the whole condition, when it has one)."""
        for i, (measure, op, limit) in enumerate(self.tests):
            for moved in (limit - 1, limit + 1):
                if 0 <= moved <= MAX_LIMIT:
                    yield self._with(i, (measure, op, moved))
        for i, (measure, op, limit) in enumerate(self.tests):
            yield self._with(i, (measure, STRICTNESS[op], limit))
        if len(self.tests) == 1:
            yield None
            return
        for i in range(len(self.tests)):
            yield When(self.tests[:i] + self.tests[i + 1 :])

    def _with(self, i: int, test: tuple[str, str, float]) -> When:
        return When((*self.tests[:i], test, *self.tests[i + 1 :]))


def _number(value: float) -> float:
    return int(value) if float(value).is_integer() else value


def _shown(value: float) -> str:
    return str(_number(value))


def parse_when(value: Any, where: str) -> When:
    """`when: {measure: {comparison: number, ...}, ...}`; anything else is refused by name."""
    d = f.mapping(value, where)
    if not d:
        raise PreprocessError(f"{where} is empty; expected at least one of {', '.join(MEASURES)}")
    tests: list[tuple[str, str, float]] = []
    for measure, comparisons in d.items():
        if measure not in MEASURES:
            raise PreprocessError(f"{where} has unknown measure {measure!r}; expected {', '.join(MEASURES)}")
        ops = f.mapping(comparisons, f"{where}.{measure}")
        if not ops:
            raise PreprocessError(f"{where}.{measure} is empty; expected a comparison of {', '.join(COMPARISONS)}")
        for op, limit in ops.items():
            if op not in COMPARISONS:
                raise PreprocessError(
                    f"{where}.{measure} has unknown comparison {op!r}; expected {', '.join(COMPARISONS)}"
                )
            number = f.number(limit, f"{where}.{measure}.{op}")
            if not 0 <= number <= MAX_LIMIT:
                raise PreprocessError(f"{where}.{measure}.{op} is {limit!r}; expected a number from 0 to {MAX_LIMIT}")
            tests.append((measure, op, number))
    return When(tuple(tests))
