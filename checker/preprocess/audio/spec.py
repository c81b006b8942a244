"""An audio input's preprocessing as the manifest declares it: its steps, and what it says of the result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checker.manifest.model import audio as m
from checker.preprocess.audio.steps import AudioStep, steps_of
from checker.preprocess.audio.stream import Stream
from checker.preprocess.checked import checked
from checker.preprocess.errors import PreprocessError
from checker.preprocess.fields import finite_pair


@dataclass(frozen=True)
class AudioSpec:
    """An audio input's `steps`, with what the input declares about the result."""

    steps: tuple[AudioStep, ...]
    sample_rate: int | None = None
    channels: int | None = None
    tolerance: float | None = None
    range: tuple[float, float] | None = None  # `range`: the bounds the tensor's values lie in
    rebuilt: bool = True  # False without `steps`: the raw files are kept for a reader, not rebuilt
    stream: Stream | None = None  # the application calls the graph once per chunk (stream.py)

    @property
    def tolerance_value(self) -> float:
        # float32 arithmetic in another order (a mean, a resampler's accumulation) moves the last bits only.
        return 1e-5 if self.tolerance is None else self.tolerance

    @classmethod
    def from_manifest(cls, prep: m.Audio | Mapping[str, Any]) -> AudioSpec:
        """The typed block (plain data, a test's, is judged by the schema first)."""
        if not isinstance(prep, m.Audio):
            return cls.from_manifest(checked(m.Audio, {"kind": "audio", **prep}, "preprocessing"))
        steps = () if prep.steps is None else steps_of(prep.steps)
        rebuilt = prep.steps is not None
        stream = Stream.from_model(prep.stream) if prep.stream is not None else None
        if stream is not None and not rebuilt:
            raise PreprocessError("`stream` says how the steps' signal is cut into calls; declare the `steps` too")
        pair = finite_pair(prep.range)
        return cls(steps, prep.sample_rate, prep.channels, prep.tolerance, pair, rebuilt, stream)
