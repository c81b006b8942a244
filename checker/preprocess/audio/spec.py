"""An audio input's preprocessing as the manifest declares it: its steps, and what it says of the result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checker.preprocess.audio.steps import AudioStep, parse_steps
from checker.preprocess.audio.stream import Stream
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
    def from_manifest(cls, prep: Mapping[str, Any]) -> AudioSpec:
        rebuilt = "steps" in prep
        steps = parse_steps(prep["steps"]) if rebuilt else ()
        tolerance = prep.get("tolerance")
        rate, channels = _opt_int(prep, "sample_rate"), _opt_int(prep, "channels")
        stream = Stream.parse(prep["stream"]) if prep.get("stream") is not None else None
        if stream is not None and not rebuilt:
            raise PreprocessError("`stream` says how the steps' signal is cut into calls; declare the `steps` too")
        pair = finite_pair(prep.get("range"))
        return cls(steps, rate, channels, _opt_number(tolerance), pair, rebuilt, stream)


def _opt_int(prep: Mapping[str, Any], key: str) -> int | None:
    value = prep.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
