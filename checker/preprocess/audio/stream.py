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
from dataclasses import dataclass
from typing import get_args

import numpy as np

from checker.manifest.model import audio as m
from checker.preprocess.errors import PreprocessError

MAX_CHUNK = m.MAX_CHUNK
FIRSTS = get_args(m.StreamFirst)


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
    def from_model(cls, block: m.Stream) -> Stream:
        """The typed block (its bounds the schema's, checked before a file is read, also for `checker
        preprocess`'s plain data)."""
        for key, value in (("chunk", block.chunk), ("history", block.history)):
            if not isinstance(value, int):  # the schema's "integer" admits 4.0, which no count of samples is
                raise PreprocessError(f"`stream.{key}` is {value!r}; expected an integer from 0 to {MAX_CHUNK}")
        return cls(block.chunk, block.history, block.first)

    def starts(self, samples: int) -> list[int]:
        """Where each frame begins in the clip (negative: zeros come first), one per whole chunk."""
        chunks = samples // self.chunk
        first = 0 if self.first == "zeros" else math.ceil(self.history / self.chunk)
        return [k * self.chunk - self.history for k in range(first, chunks)]


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
