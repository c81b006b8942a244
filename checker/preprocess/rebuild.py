"""From a manifest input and a raw file to the tensors it becomes (shared by the stages and the command).

`Inputs` holds every input's parsed preprocessing, parsed once by its kind (kinds.KINDS); `open_source` reads
a raw file as the input declares it, through the same kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.preprocess.errors import PreprocessError
from checker.preprocess.kind import ImpliedRange, Kind, Source, Target
from checker.preprocess.kinds import DERIVED, KINDS

REBUILT_KINDS = (*KINDS, DERIVED)


@dataclass
class Inputs:
    """The manifest's inputs by name, with their parsed preprocessing (each parsed once, on first use, by its
    kind; an error is kept and raised again). This is the Context's `preprocessing` slot."""

    entries: list[dict[str, Any]]
    root: Path
    scaled_in_graph: dict[str, str] = field(default_factory=dict)  # input -> what in the graph scales it
    _specs: dict[str, Any] = field(default_factory=dict)  # input name -> its parsed block, or the error

    def entry(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.entries if e.get("name") == name), None)

    def index(self, name: str) -> int:
        return next(i for i, e in enumerate(self.entries) if e.get("name") == name)

    def kind(self, name: str) -> str | None:
        prep = (self.entry(name) or {}).get("preprocessing")
        return prep.get("kind") if isinstance(prep, dict) else None

    def source_name(self, name: str) -> str:
        """The input whose preprocessing makes `name`: itself, or the text input a derived one comes from."""
        if self.kind(name) != "derived":
            return name
        source = (self.entry(name) or {})["preprocessing"].get("from")
        if not isinstance(source, str) or self.kind(source) != "text":
            raise PreprocessError(f"input '{name}' is derived from {source!r}, which is not a text input")
        return source

    def spec(self, name: str) -> Any:
        """The parsed block of an image, audio, text or tabular input; the same error again for one that failed."""
        if name not in self._specs:
            try:
                self._specs[name] = self._parse(name)
            except PreprocessError as e:
                self._specs[name] = e
        found = self._specs[name]
        if isinstance(found, PreprocessError):
            raise found
        return found

    def kind_of(self, name: str) -> Kind:
        """The kind that parses and rebuilds input `name` (a derived input's own block is read as text)."""
        return KINDS.get(self.kind(name) or "", KINDS["text"])

    def _parse(self, name: str) -> Any:
        prep = (self.entry(name) or {}).get("preprocessing") or {}
        return self.kind_of(name).parse(prep, self.root)

    def implied_range(self, name: str) -> ImpliedRange | None:
        """The value range input `name`'s preprocessing implies, None when its kind implies none."""
        kind = KINDS.get(self.kind(name) or "")
        if kind is None or not kind.implies_range:
            return None  # nothing to parse the block for
        return kind.implied_range(self.spec(name), self.target(name))

    def rebuilds(self, name: str) -> bool:
        """Whether raw files of input `name` are rebuilt: its kind is, and says so of its block (parsed here)."""
        if self.kind(name) not in REBUILT_KINDS:
            return False
        source = self.source_name(name)
        return self.kind_of(source).rebuilds(self.spec(source))

    def target(self, name: str, text_field: str = "ids") -> Target:
        e = self.entry(name) or {}
        return Target(
            name,
            self.index(name),
            str(e.get("dtype", "float32")),
            e.get("layout"),
            e.get("shape"),
            text_field,
            self.scaled_in_graph.get(name),
        )

    def text_targets(self, source: str, only: str | None = None) -> list[Target]:
        """The text input `source` and the inputs derived from it (or only the one named `only`)."""
        out = []
        for e in self.entries:
            prep = e.get("preprocessing")
            prep = prep if isinstance(prep, dict) else {}
            name = e.get("name")
            if not isinstance(name, str) or (only is not None and name != only):
                continue
            if name == source or (prep.get("kind") == "derived" and prep.get("from") == source):
                out.append(self.target(name, str(prep.get("field", "ids"))))
        return out


def open_source(inputs: Inputs, name: str, raw: Path, raw_name: str, only_named: bool = False) -> Source | None:
    """The raw file `raw` read as input `name` declares; None for kinds that are not rebuilt (custom, and
    audio without `steps`).

    For a text input, the source also makes the inputs derived from it, unless `only_named`.
    """
    if not inputs.rebuilds(name):
        return None
    source = inputs.source_name(name)
    kind = inputs.kind_of(source)
    if kind.tokens:
        only = name if (only_named or inputs.kind(name) == DERIVED) else None
        targets = inputs.text_targets(source, only)
    else:
        targets = [inputs.target(name)]
    return kind.open(inputs.spec(source), targets, raw, raw_name, inputs.root)
