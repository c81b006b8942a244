"""A streaming application's calls: the `stream: {chunk, history, first}` block of an audio input.

An application that listens (a wake-word detector, a voice activity detector) does not call its graph on a whole
clip: it receives `chunk` samples at a time and calls the graph on the last `history` samples before the chunk
followed by the chunk. The first chunk has no history: openWakeWord's buffer waits until it has one (`skip`),
a zero-state model such as Silero VAD's wrapper puts zeros in its place (`zeros`). A trailing partial chunk
never reaches the graph. The steps that read the whole signal (decode, mix, resample) run once on the clip;
every later step runs on each frame as the application runs it on each call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker.preprocess.errors import PreprocessError

MAX_CHUNK = 1 << 24  # samples: as the `frames` step's size
FIRSTS = ("skip", "zeros")


@dataclass(frozen=True)
class Stream:
    """The declared `stream` block."""

    chunk: int
    history: int = 0
    first: str = "skip"

    def words(self) -> str:
        return f"`stream: {{chunk: {self.chunk}, history: {self.history}, first: {self.first}}}`"

    @property
    def length(self) -> int:
        """Samples in one frame: the history, then the chunk."""
        return self.history + self.chunk

    @classmethod
    def parse(cls, value: Any) -> Stream:
        """The block, with the bounds checked before a file is read (`checker preprocess` meets no schema)."""
        if not isinstance(value, Mapping):
            raise PreprocessError(f"`stream` takes a mapping {{chunk, history, first}}, not {value!r}")
        unknown = sorted(str(k) for k in value if k not in ("chunk", "history", "first"))
        if unknown:
            raise PreprocessError(f"`stream` has unknown key(s) {', '.join(unknown)}; expected chunk, history, first")
        chunk: Any = value.get("chunk")
        history: Any = value.get("history", 0)
        if not _integer(chunk, 1):
            raise PreprocessError(f"`stream.chunk` is {chunk!r}; expected an integer from 1 to {MAX_CHUNK}")
        if not _integer(history, 0):
            raise PreprocessError(f"`stream.history` is {history!r}; expected an integer from 0 to {MAX_CHUNK}")
        first = value.get("first", "skip")
        if first not in FIRSTS:
            raise PreprocessError(f"`stream.first` is {first!r}; expected one of {', '.join(FIRSTS)}")
        return cls(int(chunk), int(history), str(first))

    def starts(self, samples: int) -> list[int]:
        """Where each frame begins in the clip (negative: zeros come first), one per whole chunk."""
        chunks = samples // self.chunk
        first = 0 if self.first == "zeros" else math.ceil(self.history / self.chunk)
        return [k * self.chunk - self.history for k in range(first, chunks)]


def _integer(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= MAX_CHUNK


def frame(x: np.ndarray, axis: int, start: int, length: int) -> np.ndarray:
    """`length` samples of `x` along `axis` from `start`, with zeros where `start` lies before the clip."""
    before = max(0, -start)
    piece = np.take(x, range(max(start, 0), start + length), axis=axis)
    if not before:
        return piece
    widths = [(0, 0)] * x.ndim
    widths[axis] = (before, 0)
    return np.pad(piece, widths)


def implied(stream: Stream, samples: int, frames: int, length: int) -> list[Stream]:
    """What the stored tensor's shape says the application used: a call of the stored `length` (the last axis)
    with the declared chunk or the declared history; and chunk and history that keep the declared length and
    give the stored number of frames (a few candidates near samples / frames, those that fit)."""
    if frames < 1:
        return []
    out: list[Stream] = []
    if length != stream.length:
        for chunk, history in ((stream.chunk, length - stream.chunk), (length - stream.history, stream.history)):
            if 1 <= chunk <= MAX_CHUNK and 0 <= history <= MAX_CHUNK:
                out.append(Stream(chunk, history, stream.first))
    for first in (stream.first, *(f for f in FIRSTS if f != stream.first)):
        for chunk in dict.fromkeys(samples // (frames + extra) for extra in range(4)):
            if 1 <= chunk <= stream.length:
                other = Stream(chunk, stream.length - chunk, first)
                if other != stream and len(other.starts(samples)) == frames:
                    out.append(other)
    return out[:6]
