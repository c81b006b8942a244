"""The bundle's answers, ready to decode: each declared answer with its kind, how a case's decoder finds what it
needs (labels, the raw image's placement, a tokenizer), and the reference answers decoded once from the cases'
expected outputs. The answers stage (checks/answers.py) makes it; the comparison reads it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from checker.answers.items import Item
from checker.answers.kind import Env, Kind
from checker.answers.make import kind_of, make
from checker.reports.parts.answers import CaseAnswers

if TYPE_CHECKING:
    from checker.context import Case


@dataclass(frozen=True)
class Declared:
    answer: Any  # one of the answer blocks of checker/manifest/model/answers.py
    index: int  # its place in `answers`

    @property
    def name(self) -> str:
        return str(self.answer.name)

    @property
    def kind(self) -> Kind:
        return kind_of(self.answer)


@dataclass
class Book:
    answers: dict[str, Declared]
    env_for: Callable[[Case, Declared], Env]
    # case -> answer -> the answer the declared steps make of the case's expected outputs
    reference: dict[str, dict[str, list[Item]]] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)  # answers that cannot be made (answers.invalid): not judged
    shown: list[CaseAnswers] = field(default_factory=list)  # the report's decoded answers

    def decode(self, name: str, case: Case, outputs: Mapping[str, np.ndarray]) -> list[Item]:
        declared = self.answers[name]
        return make(declared.answer, outputs, self.env_for(case, declared))
