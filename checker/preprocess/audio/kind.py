"""The audio kind: what the stages ask of an audio input (kind.Kind)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from checker.manifest.model.audio import Audio
from checker.preprocess.audio.decode import DecodeCache
from checker.preprocess.audio.explain import UNEXPLAINED, audio_alternatives
from checker.preprocess.audio.source import AudioSource
from checker.preprocess.audio.spec import AudioSpec
from checker.preprocess.kind import ImpliedRange, Target
from checker.preprocess.search import Search, explain


class AudioKind:
    name = "audio"
    tokens = False
    relative_tolerance = False
    implies_range = True
    unexplained = UNEXPLAINED

    def parse(self, prep: Audio | dict[str, Any], root: Path) -> AudioSpec:
        return AudioSpec.from_manifest(prep)

    def rebuilds(self, spec: AudioSpec) -> bool:
        return spec.rebuilt  # without steps, the raw files are kept for a reader

    def open(self, spec: AudioSpec, targets: list[Target], raw: Path, raw_name: str, root: Path) -> AudioSource:
        return AudioSource(spec, DecodeCache(raw, raw_name), targets[0])

    def implied_range(self, spec: AudioSpec, target: Target) -> ImpliedRange | None:
        if spec.range is None:
            return None
        low, high = spec.range
        return ImpliedRange(np.array([low]), np.array([high]), None, "preprocessing.range")

    def explain(self, source: AudioSource, target: str, stored: np.ndarray, tolerance: float) -> Search:
        shape = tuple(int(d) for d in stored.shape) if source.spec.stream is not None else None
        return explain(audio_alternatives(source, tolerance, shape), stored)


KIND = AudioKind()
