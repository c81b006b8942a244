"""What a report says of the application's answers (docs/answers.md): the answers that changed under a graph, in
the product's words, and each case's reference answers as the declared steps decode them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.reports.parts.values import JsonValue, json_value


@dataclass(frozen=True)
class AnswerChange:
    """An answer that changed under a graph, in the product's words: "loses 'person' (0.26 → 0.24)" in a case."""

    answer: str
    case: str
    change: str

    def to_dict(self) -> dict[str, str]:
        return {"answer": self.answer, "case": self.case, "change": self.change}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnswerChange:
        return cls(str(data["answer"]), str(data["case"]), str(data["change"]))


@dataclass
class CaseAnswers:
    """One case's reference answers as the declared steps decode its expected outputs (each bounded: at most 100
    detections, 1,000 characters or 4,096 numbers an item shown). An item's shape is its kind's (a detection's
    box, label and score; a string; a vector): the kinds in checker.answers say it, so it is kept as JSON holds it."""

    case: str
    answers: dict[str, list[JsonValue]] = field(default_factory=dict)  # answer name -> one entry per batch item

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "answers": {name: list(items) for name, items in self.answers.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseAnswers:
        raw = data.get("answers")
        answers = {
            str(name): [json_value(i) for i in items]
            for name, items in (raw.items() if isinstance(raw, Mapping) else ())
            if isinstance(items, list)
        }
        return cls(str(data["case"]), answers)
