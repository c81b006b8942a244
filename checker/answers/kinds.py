"""The kinds of answer, by the manifest's `kind:`: the one table the stages look a kind up in. A new kind is a module
beside these with its KIND, its blocks in checker/manifest/model/answers.py, and one entry here
(tests/answers/test_entries.py holds every kind to its blocks, its docs and its rule)."""

from __future__ import annotations

from checker.answers.classes import KIND as CLASSES
from checker.answers.decision import KIND as DECISION
from checker.answers.detections import KIND as DETECTIONS
from checker.answers.embedding import KIND as EMBEDDING
from checker.answers.kind import Kind
from checker.answers.mask import KIND as MASK
from checker.answers.text import KIND as TEXT
from checker.answers.values import KIND as VALUES

_ALL: tuple[Kind, ...] = (CLASSES, DETECTIONS, TEXT, EMBEDDING, MASK, DECISION, VALUES)
KINDS: dict[str, Kind] = {k.name: k for k in _ALL}
