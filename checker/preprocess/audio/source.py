"""A raw audio file (decoded once per library) and the input its steps make."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from checker.preprocess.audio.decode import DecodeCache
from checker.preprocess.audio.pipeline import Result, audio_layout, build_audio
from checker.preprocess.audio.spec import AudioSpec
from checker.preprocess.errors import PreprocessError
from checker.preprocess.kind import Target


@dataclass
class AudioSource:
    """A raw audio file (decoded once per library) and the input its steps make."""

    spec: AudioSpec
    decoded: DecodeCache
    target: Target

    @property
    def tolerance(self) -> float:
        return self.spec.tolerance_value

    def result(self, spec: AudioSpec | None = None) -> Result:
        spec = spec or self.spec
        layout = audio_layout(self.target.layout, self.target.shape, spec)
        return build_audio(spec, self.decoded, layout, self.target.dtype)

    def build(self) -> dict[str, np.ndarray]:
        """The tensor; a rate or channel count other than the input declares is an error that says so."""
        made = self.result()
        for problem in rate_problems(self.spec, made):
            raise PreprocessError(problem)
        return {self.target.name: made.tensor}


def rate_problems(spec: AudioSpec, made: Result) -> list[str]:
    problems = []
    if spec.sample_rate is not None and made.rate != spec.sample_rate:
        how = (
            "after its resample step"
            if made.resampled
            else f"the file's own rate: no resample step brings it to {spec.sample_rate} Hz"
        )
        problems.append(
            f"the rebuilt signal is at {made.rate} Hz ({how}), but the input declares sample_rate {spec.sample_rate}"
        )
    if spec.channels is not None and made.channels != spec.channels:
        problems.append(
            f"the rebuilt signal has {made.channels} channel(s), but the input declares channels {spec.channels}"
            + (" (mix them with a `mix` step)" if made.channels > spec.channels else "")
        )
    return problems
