"""From a manifest input and a raw file to the tensors it becomes (shared by the stages and the command).

`Inputs` holds every input, typed, and its preprocessing, parsed once by its kind (kinds.KINDS); `open_source`
reads a raw file as the input declares it, through the same kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.manifest.model.inputs import Input, Preprocessing
from checker.manifest.model.text import Derived, Text
from checker.preprocess.checked import checked
from checker.preprocess.errors import PreprocessError
from checker.preprocess.kind import ImpliedRange, Kind, Source, Target
from checker.preprocess.kinds import DERIVED, KINDS

REBUILT_KINDS = (*KINDS, DERIVED)


@dataclass
class Inputs:
    """The manifest's inputs (typed) by name, with their parsed preprocessing (each parsed once, on first use,
    by its kind; an error is kept and raised again). This is the Context's `preprocessing` slot."""

    entries: list[Input]
    root: Path
    scaled_in_graph: dict[str, str] = field(default_factory=dict)  # input -> what in the graph scales it
    _specs: dict[str, Any] = field(default_factory=dict)  # input name -> its parsed block, or the error

    @classmethod
    def from_data(cls, entries: Any, root: Path) -> Inputs:
        """Inputs given as plain data (`checker preprocess` reads a manifest that need not be complete yet, a
        test), each judged by the schema as a manifest's input; one that gives no dtype or meaning is read as
        float32 and tensor, which its preprocessing does not need."""
        filled = [{"dtype": "float32", "meaning": "tensor", **e} if isinstance(e, dict) else e for e in entries]
        return cls(checked(list[Input], filled, "inputs"), root)

    def entry(self, name: str) -> Input | None:
        return next((e for e in self.entries if e.name == name), None)

    def index(self, name: str) -> int:
        return next(i for i, e in enumerate(self.entries) if e.name == name)

    def preprocessing(self, name: str) -> Preprocessing | None:
        entry = self.entry(name)
        return None if entry is None else entry.preprocessing

    def kind(self, name: str) -> str | None:
        prep = self.preprocessing(name)
        return None if prep is None else prep.kind

    def source_name(self, name: str) -> str:
        """The input whose preprocessing makes `name`: itself, or the text input a derived one comes from."""
        prep = self.preprocessing(name)
        if not isinstance(prep, Derived):
            return name
        if self.kind(prep.from_) != "text":
            raise PreprocessError(f"input '{name}' is derived from {prep.from_!r}, which is not a text input")
        return prep.from_

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
        """The kind that parses and rebuilds input `name` (a derived input is rebuilt by its text input's)."""
        return KINDS.get(self.kind(name) or "", KINDS["text"])

    def _parse(self, name: str) -> Any:
        prep = self.preprocessing(name)
        if prep is None or prep.kind not in KINDS:
            raise PreprocessError(f"input '{name}' has no preprocessing of a kind the checker parses")
        return KINDS[prep.kind].parse(prep, self.root)

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
        e = self.entry(name)
        assert e is not None, name
        return Target(name, self.index(name), e.dtype, e.layout, e.shape, text_field, self.scaled_in_graph.get(name))

    def text_targets(self, source: str, only: str | None = None) -> list[Target]:
        """The text input `source` and the inputs derived from it (or only the one named `only`)."""
        out = []
        for e in self.entries:
            prep = e.preprocessing
            if only is not None and e.name != only:
                continue
            if e.name == source or (isinstance(prep, Derived) and prep.from_ == source):
                out.append(self.target(e.name, prep.field if isinstance(prep, (Text, Derived)) else "ids"))
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
