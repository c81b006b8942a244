"""The text kind: what the stages ask of a text input (kind.Kind); its derived inputs come with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from checker.manifest.model.text import Text
from checker.preprocess.kind import ImpliedRange, Target
from checker.preprocess.search import UNEXPLAINED, Search, explain
from checker.preprocess.text.explain import text_alternatives
from checker.preprocess.text.source import TextSource, open_text
from checker.preprocess.text.spec import TextSpec


class TextKind:
    name = "text"
    tokens = True
    relative_tolerance = False
    implies_range = False
    unexplained = UNEXPLAINED

    def parse(self, prep: Text | dict[str, Any], root: Path) -> TextSpec:
        return TextSpec.from_manifest(prep)  # the tokenizer is read when a text is tokenized

    def rebuilds(self, spec: TextSpec) -> bool:
        return True

    def open(self, spec: TextSpec, targets: list[Target], raw: Path, raw_name: str, root: Path) -> TextSource:
        return open_text(spec, targets, raw, raw_name, root)

    def implied_range(self, spec: TextSpec, target: Target) -> ImpliedRange | None:
        return None  # token ids have the vocabulary's range, which the graph, not the manifest, bounds

    def explain(self, source: TextSource, target: str, stored: np.ndarray, tolerance: float) -> Search:
        return explain(text_alternatives(source, target, stored), stored, first=True)


KIND = TextKind()
