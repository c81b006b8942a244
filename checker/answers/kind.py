"""The one face every kind of answer shows: decode the tensors, read a stored answer, measure one side against the
other for a rule, say what changed in the product's words, and the one-edit changes of its decoder.

Each kind is a module of this package exposing `KIND`; kinds.KINDS looks one up by the manifest's `kind:`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from checker.answers.geometry import Placement
from checker.answers.items import Item
from checker.manifest.model.core import Block
from checker.reports.parts.values import JsonValue

# What the JSON report shows of one item (the figures use all of it).
MAX_SHOWN_DETECTIONS = 100
MAX_SHOWN_CHARACTERS = 1000
MAX_SHOWN_NUMBERS = 4096
MAX_CHANGES = 5  # changes an item's answer is described by; the count says how many more


class Env(Protocol):
    """What a decoder needs beyond the tensors, for one case: given by the stage that runs it."""

    @property
    def inputs(self) -> Mapping[str, np.ndarray]: ...

    def labels(self) -> list[str] | None:
        """The answer's labels (its own, else its first output's), or None."""
        ...

    def placement(self, image_input: str) -> Placement:
        """Where this case's raw image lies in the input's tensor (AnswerError when it cannot be said)."""
        ...

    def input_size(self, image_input: str | None) -> tuple[int, int]:
        """The height and width of an image input's tensor (None: the graph's image input)."""
        ...

    def tokenizer(self, text_input: str) -> Any:
        """The tokenizers.Tokenizer of a text input's preprocessing."""
        ...

    def image_inputs(self) -> list[str]:
        """The graph's image inputs (what an edit may name as `to_raw`)."""
        ...


@dataclass
class CaseMeasure:
    """One case under one rule on answers: its figure, whether it passes, every figure measured, and what changed
    (in the product's words, this side against the other)."""

    figure: float
    passed: bool
    figures: dict[str, float] = field(default_factory=dict)
    note: str | None = None
    changes: list[str] = field(default_factory=list)
    empty: bool = False  # the other side's answer shows nothing: the case judged nothing
    items: int = 0


@dataclass(frozen=True)
class Overall:
    """A rule judged over its whole slice at once (a count of flips, a neighbour agreement): its figure, the
    case that weighs most, and why it failed."""

    figure: float
    passed: bool
    worst_case: str | None
    note: str | None = None


@dataclass(frozen=True)
class Edit:
    """A one-edit change of an answer's declaration, and the words that name it."""

    answer: Block
    words: str
    tweak: Any = None  # passed to the kind's decode: an edit no field of the declaration can say


class Kind(Protocol):
    name: str

    @property
    def rule(self) -> type[Block]:
        """Its rule block (checker/manifest/model/answers.py)."""
        ...

    direction: str  # "min": the figure must be >= the threshold; "max": <=
    wording: str  # the worst case's figure in words: {v} the figure, {t} the threshold, and the rule's parameters
    keeps_items: bool  # `overall` needs every case's answers (embeddings for neighbours), not only its measure

    def threshold(self, rule: Any) -> float:
        """The threshold the case's figure is held to."""
        ...

    def decode(self, answer: Any, tensors: Sequence[np.ndarray], env: Env, tweak: Any = None) -> list[Item]:
        """One answer per batch item; `tweak` is an edit of the decoder's own (answer fidelity)."""
        ...

    def parse(self, value: Any, source: str) -> list[Item]:
        """A stored answer (parsed JSON, or an array) as items; AnswerError says what is wrong."""
        ...

    def measure(self, rule: Any, answer: Any, mine: list[Item], other: list[Item]) -> CaseMeasure: ...

    def overall(self, rule: Any, cases: Sequence[tuple[str, list[Item], list[Item], CaseMeasure]]) -> Overall | None:
        """The slice's figure when the rule is judged over the whole slice; None: case by case (min_pass_rate)."""
        ...

    def gap(self, decoded: list[Item], stored: list[Item]) -> str | None:
        """How the declared steps' answer differs from the stored one at the strictest (None: it is the same)."""
        ...

    def shown(self, items: list[Item]) -> list[JsonValue]:
        """The items as bounded JSON data for the report."""
        ...

    def edits(self, answer: Any, env: Env) -> Iterator[Edit]:
        """The decoder's one-edit changes (answer fidelity)."""
        ...


def per_item(x: np.ndarray, rank: int, what: str) -> list[np.ndarray]:
    """`x` as a list of items of `rank` axes: a tensor of that rank is one item, one more axis is the batch."""
    if x.ndim == rank:
        return [x]
    if x.ndim == rank + 1:
        return list(x)
    from checker.answers.errors import AnswerError

    raise AnswerError(
        f"{what} needs a tensor of rank {rank} (one item) or {rank + 1} (a batch) after the steps, not {list(x.shape)}"
    )


def label_of(labels: list[str] | None, index: int) -> str:
    if labels is not None and 0 <= index < len(labels):
        return labels[index]
    return str(index)


def short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bounded_numbers(x: np.ndarray) -> dict[str, Any]:
    flat = np.asarray(x, np.float64).reshape(-1)
    shown = [float(v) if np.isfinite(v) else None for v in flat[:MAX_SHOWN_NUMBERS]]
    out: dict[str, Any] = {"shape": list(np.shape(x)), "values": shown}
    if flat.size > MAX_SHOWN_NUMBERS:
        out["more"] = int(flat.size - MAX_SHOWN_NUMBERS)
    return out


def no_overall(rule: Any, cases: Sequence[tuple[str, list[Item], list[Item], CaseMeasure]]) -> Overall | None:
    """A rule judged case by case."""
    return None
