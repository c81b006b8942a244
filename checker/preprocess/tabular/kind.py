"""The tabular kind: what the stages ask of a tabular input (kind.Kind), from this package's modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from checker.manifest.model.tabular import Tabular
from checker.preprocess.checked import checked
from checker.preprocess.kind import ImpliedRange, Target
from checker.preprocess.search import Search, explain
from checker.preprocess.tabular.explain import UNEXPLAINED, tabular_alternatives
from checker.preprocess.tabular.files import read_block
from checker.preprocess.tabular.rows import read_table
from checker.preprocess.tabular.source import TabularSource
from checker.preprocess.tabular.spec import TabularSpec


class TabularKind:
    name = "tabular"
    tokens = False
    relative_tolerance = True  # features of any magnitude: tolerance times max(1, |stored|)
    implies_range = False  # standard and min_max (not clipped) leave the features unbounded
    unexplained = UNEXPLAINED

    def parse(self, prep: Tabular | dict[str, Any], root: Path) -> TabularSpec:
        """The typed block (plain data, a test's, is judged by the schema first)."""
        block = prep if isinstance(prep, Tabular) else checked(Tabular, prep, "preprocessing")
        return TabularSpec.from_manifest(read_block(block, root))

    def rebuilds(self, spec: TabularSpec) -> bool:
        return True

    def open(self, spec: TabularSpec, targets: list[Target], raw: Path, raw_name: str, root: Path) -> TabularSource:
        return TabularSource(spec, read_table(raw, raw_name), targets[0])

    def implied_range(self, spec: TabularSpec, target: Target) -> ImpliedRange | None:
        return None

    def explain(self, source: TabularSource, target: str, stored: np.ndarray, tolerance: float) -> Search:
        return explain(tabular_alternatives(source, stored), stored)


KIND = TabularKind()
