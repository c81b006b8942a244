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

from checker.manifest.model import image as m
from checker.preprocess.checked import checked

# Each measure and comparison is a field of the model's When and Compare (tests/preprocess/test_step_entries.py).
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
MAX_LIMIT = m.MAX_LIMIT


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


def when_of(block: m.When) -> When:
    """A condition from its typed block, its comparisons in the order the manifest gives them (the schema has
    checked the measures, the comparisons and their bounds)."""
    tests: list[tuple[str, str, float]] = []
    for measure in block.given or ():
        compare = getattr(block, measure)
        tests.extend((measure, op, float(getattr(compare, op))) for op in compare.given or ())
    return When(tuple(tests))


def parse_when(value: Any, where: str) -> When:
    """`when: {measure: {comparison: number, ...}, ...}` given as plain data, judged by its schema first."""
    return when_of(checked(m.When, value, where))
