"""The one face every input kind shows the stages: parse a block, open a raw file, rebuild its tensors, the
value range the preprocessing implies, and the one-edit explanation of a stored tensor that differs.

Each kind lives in its own package (image/, audio/, text/, tabular/) and exposes one KIND of this shape, looked up by
`kind:` in kinds.KINDS. A new kind is a package with its KIND and one entry there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from checker.preprocess.search import Search


@dataclass(frozen=True)
class Target:
    """A manifest input that a raw file makes, and how its tensor is arranged."""

    name: str
    index: int  # its place in the manifest's `inputs`
    dtype: str
    layout: str | None
    shape: Any
    field: str = "ids"  # for text: which encoding array it holds
    scaled_in_graph: str | None = None  # what in the graph scales this input itself (an ai.onnx.ml Scaler, ...)


@dataclass(frozen=True)
class ImpliedRange:
    """The bounds a kind's preprocessing keeps every tensor value in (one per channel, or one)."""

    low: np.ndarray
    high: np.ndarray
    axis: int | None  # the channel axis the per-channel bounds run along
    why: str  # what implies it, in the manifest's words


class Source(Protocol):
    """A raw file opened as an input declares it: `build` rebuilds the tensors it makes, by input name."""

    @property
    def tolerance(self) -> float: ...

    def build(self) -> dict[str, np.ndarray]: ...


class Kind(Protocol):
    """What the fidelity and ranges stages ask of an input kind."""

    name: str
    tokens: bool  # its tensors are token ids: compared exactly, and counted as tokens in a message
    implies_range: bool  # its blocks can imply a value range (the ranges stage parses no other)
    relative_tolerance: bool  # its tolerance is times max(1, |stored|) per value (tabular features)
    unexplained: str  # what a message says when no single edit explains a difference

    def parse(self, prep: Any, root: Path) -> Any:
        """The parsed block, from its typed block (checker/manifest/model/); the files it names (a config, an
        imported pipeline) are read here, first."""
        ...

    def rebuilds(self, spec: Any) -> bool:
        """Whether raw files of this input are rebuilt (audio without `steps` keeps them for a reader)."""
        ...

    def open(self, spec: Any, targets: list[Target], raw: Path, raw_name: str, root: Path) -> Source:
        """The raw file read for the inputs `targets` (the first is the one named; text adds derived ones)."""
        ...

    def implied_range(self, spec: Any, target: Target) -> ImpliedRange | None:
        """The value range the preprocessing implies for the input's tensor, or None when it implies none."""
        ...

    def explain(self, source: Any, target: str, stored: np.ndarray, tolerance: float) -> Search:
        """The search for the one edit of the declared preprocessing that reproduces `stored`."""
        ...
