"""Naming the one edit of an audio input's declared steps that reproduces the stored tensor.

The neighbours of the declared list are tried in a fixed order, at most MAX_NEIGHBOURS of them, on the file
decoded once per library: a parameter changed within its finite choices (the rate among the usual ones, the
channel mix, the resampler and its quality, the decoder, the normalisation mode, the pad position), one step
left out, two adjacent steps swapped, or one usual step added (a channel mix, a 16-bit scale, a normalisation,
a resample); a scale's factor changed between 32,767 and 32,768.
The message says the edit in the manifest's own words.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from checker.preprocess.audio.pipeline import clip_samples
from checker.preprocess.audio.source import AudioSource
from checker.preprocess.audio.spec import AudioSpec
from checker.preprocess.audio.steps import (
    NORMALIZE_MODES,
    POSITIONS,
    QUALITIES,
    REGISTRY,
    AudioStep,
    Batch,
    Cast,
    Decode,
    Frames,
    Gain,
    Layout,
    Mix,
    Normalize,
    Pad,
    Resample,
    Scale,
    Trim,
)
from checker.preprocess.audio.stream import Stream, implied
from checker.preprocess.errors import PreprocessError
from checker.preprocess.registry import NO_CHANGES
from checker.preprocess.search import Alternative, explain

MAX_NEIGHBOURS = 64
RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
UNEXPLAINED = (
    "no single edit of the declared steps (a rate, the channel mix, the resampler, a scale, a normalisation, a "
    "step left out, added or swapped with its neighbour), nor a second one on top of the nearest, explains it"
)

Edit = tuple[str, AudioSpec]  # completes "the stored tensor matches the declared preprocessing ..."


def audio_alternatives(
    src: AudioSource, tolerance: float, stored: tuple[int, ...] | None = None
) -> Iterator[Alternative]:
    """The neighbours of the declared steps, at most MAX_NEIGHBOURS, for search.py's ranked search; each with
    its own neighbours as the second edits a second round may try. A streamed input's neighbours come first:
    `first` flipped, chunk and history swapped, and those the stored number of frames implies."""
    rate = src.decoded.done_rate()
    for description, spec in _streams(src, stored):
        yield Alternative(description, functools.partial(_tensor, src, spec), tolerance)

    def second(first: Edit) -> Iterator[Alternative]:
        for count, (description, spec) in enumerate(neighbours(first[1], rate)):
            if count >= MAX_NEIGHBOURS:
                return
            if spec != src.spec:
                words = f"{first[0]}, and {description}"
                yield Alternative(words, functools.partial(_tensor, src, spec), tolerance)

    for count, edit in enumerate(neighbours(src.spec, rate)):
        if count >= MAX_NEIGHBOURS:
            return
        description, spec = edit
        then = functools.partial(second, edit)
        yield Alternative(description, functools.partial(_tensor, src, spec), tolerance, then=then)


def _streams(src: AudioSource, stored: tuple[int, ...] | None) -> Iterator[Edit]:
    stream = src.spec.stream
    if stream is None:
        return
    others = [replace(stream, first="zeros" if stream.first == "skip" else "skip")]
    if stream.history:
        others.append(Stream(stream.history, stream.chunk, stream.first))
    if stored is not None and len(stored) >= 2:
        try:
            samples = clip_samples(src.spec, src.decoded)
        except PreprocessError:
            samples = 0
        others += implied(stream, samples, stored[0], stored[-1])
    for other in dict.fromkeys(others):
        if other != stream:
            yield f"with {other.words()} in place of {stream.words()}", replace(src.spec, stream=other)


def _tensor(src: AudioSource, spec: AudioSpec) -> np.ndarray:
    # A neighbour that cannot be built from this file (a layout without C before a mix) raises PreprocessError,
    # which the search skips.
    return src.result(spec).tensor


def explain_audio(src: AudioSource, stored: np.ndarray, tolerance: float) -> str | None:
    """The neighbour whose tensor reproduces the stored one most exactly within `tolerance`, in the manifest's
    words."""
    shape = tuple(int(d) for d in stored.shape) if src.spec.stream is not None else None
    search = explain(audio_alternatives(src, tolerance, shape), stored)
    return search.fits[0].description if search.fits else None


def neighbours(spec: AudioSpec, file_rate: int | None) -> Iterator[Edit]:
    yield from _changed(spec, file_rate)
    yield from _dropped(spec)
    yield from _added(spec, file_rate)
    yield from _swapped(spec)


def _with(spec: AudioSpec, steps: list[AudioStep]) -> AudioSpec:
    return replace(spec, steps=tuple(steps))


def _changed(spec: AudioSpec, file_rate: int | None) -> Iterator[Edit]:
    for i, step in enumerate(spec.steps):
        for other in REGISTRY.changes_of(type(step))(step, file_rate):
            steps = list(spec.steps)
            steps[i] = other
            yield f"with {other.words()} in place of {step.words()}", _with(spec, steps)


# Each step's other values among its parameters' finite choices, one parameter at a time.


@REGISTRY.register_changes(Decode)
def _decode(step: Decode, _: int | None) -> Iterator[AudioStep]:
    yield step.changed(library="wave" if step.library == "soundfile" else "soundfile")


@REGISTRY.register_changes(Mix)
def _mix(step: Mix, _: int | None) -> Iterator[AudioStep]:
    yield Mix(to="first" if step.to == "mono" else "mono", written=("to",))


@REGISTRY.register_changes(Resample)
def _resample(step: Resample, file_rate: int | None) -> Iterator[AudioStep]:
    rates = [*RATES, *([file_rate] if file_rate else [])]
    yield from (step.changed(rate=r) for r in dict.fromkeys(rates) if r != step.rate)
    yield step.changed(library="scipy" if step.library == "soxr" else "soxr")
    yield from (step.changed(quality=q) for q in QUALITIES if q != step.quality)


@REGISTRY.register_changes(Normalize)
def _normalize(step: Normalize, _: int | None) -> Iterator[AudioStep]:
    yield from (Normalize(mode=m, written=("mode",)) for m in NORMALIZE_MODES if m != step.mode)


@REGISTRY.register_changes(Pad)
def _pad(step: Pad, _: int | None) -> Iterator[AudioStep]:
    yield from (step.changed(position=p) for p in POSITIONS if p != step.position)


# The factors that take a -1..1 signal to 16-bit sample values: 32,768 undoes the decoder's own division (what
# an application that feeds int16 samples as floats has), 32,767 is the full scale some code multiplies by.
PCM_FACTORS = (32768.0, 32767.0)


@REGISTRY.register_changes(Scale)
def _scale(step: Scale, _: int | None) -> Iterator[AudioStep]:
    """The other 16-bit factor (32,767 for 32,768 and back), or either one for another factor."""
    for factor in PCM_FACTORS:
        if float(step.factor) != factor:
            yield Scale(factor=_written(factor), as_scalar=True)


def _written(factor: float) -> float | int:
    return int(factor) if factor.is_integer() else factor


# A gain, a trim, a frames, a batch, a layout and a cast have no usual value to try: a step left out, added or
# swapped is tried for them as for every step.
for _type in (Gain, Trim, Frames, Batch, Layout, Cast):
    REGISTRY.register_changes(_type)(NO_CHANGES)


def _dropped(spec: AudioSpec) -> Iterator[Edit]:
    for i, step in enumerate(spec.steps):
        if i > 0 and not isinstance(step, (Layout, Cast)):
            yield f"without {step.words()}", _with(spec, [s for j, s in enumerate(spec.steps) if j != i])


def _added(spec: AudioSpec, file_rate: int | None) -> Iterator[Edit]:
    types = [type(s) for s in spec.steps]
    tail = next((i for i, t in enumerate(types) if t in (Frames, Batch, Layout, Cast)), len(types))
    if Mix not in types:
        for to in ("mono", "first"):
            yield _insert(spec, 1, Mix(to=to, written=("to",)))
    if Scale not in types:  # a front end that takes 16-bit sample values, declared in -1..1
        for factor in PCM_FACTORS:
            yield _insert(spec, tail, Scale(factor=_written(factor), as_scalar=True))
    if Normalize not in types:
        for mode in NORMALIZE_MODES:
            yield _insert(spec, tail, Normalize(mode=mode, written=("mode",)))
    if Resample not in types:
        at = types.index(Mix) + 1 if Mix in types else 1
        for rate in RATES:
            if rate != file_rate:
                yield _insert(spec, at, Resample(rate=rate, written=("rate",)))


def _insert(spec: AudioSpec, at: int, step: AudioStep) -> Edit:
    steps = list(spec.steps)
    steps.insert(at, step)
    where = f"after {steps[at - 1].words()}" if at > 0 else "first"
    return f"with {step.words()} added {where}", _with(spec, steps)


def _swapped(spec: AudioSpec) -> Iterator[Edit]:
    steps = spec.steps
    for i in range(1, len(steps) - 1):
        a, b = steps[i], steps[i + 1]
        if type(a) is type(b):
            continue
        order = [*steps[:i], b, a, *steps[i + 2 :]]
        yield f"with {b.words()} before {a.words()} (the manifest has it after)", _with(spec, list(order))
