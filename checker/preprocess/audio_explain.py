"""Naming the one edit of an audio input's declared steps that reproduces the stored tensor.

The neighbours of the declared list are tried in a fixed order, at most MAX_NEIGHBOURS of them, on the file
decoded once per library: a parameter changed within its finite choices (the rate among the usual ones, the
channel mix, the resampler and its quality, the decoder, the normalisation mode, the pad position), one step
left out, two adjacent steps swapped, or one usual step added (a channel mix, a normalisation, a resample).
The message says the edit in the manifest's own words.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from checker.preprocess.audio import POSITIONS, QUALITIES, AudioSpec, Step
from checker.preprocess.difference import difference
from checker.preprocess.errors import PreprocessError
from checker.preprocess.rebuild import AudioSource

MAX_NEIGHBOURS = 64
RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
NORMALIZE = ("zero_mean_unit_var", "peak")
UNEXPLAINED = (
    "no single edit of the declared steps (a rate, the channel mix, the resampler, a normalisation, a step left "
    "out, added or swapped with its neighbour) explains it"
)

Edit = tuple[str, AudioSpec]  # completes "the stored tensor matches the declared preprocessing ..."


def explain_audio(src: AudioSource, stored: np.ndarray, tolerance: float) -> str | None:
    """The first neighbour whose tensor equals the stored one within `tolerance`, in the manifest's words."""
    for count, (description, spec) in enumerate(neighbours(src.spec, src.decoded.done_rate())):
        if count >= MAX_NEIGHBOURS:
            return None
        try:
            tensor = src.result(spec).tensor
        except PreprocessError:
            continue  # this neighbour cannot be built from this file (a layout without C before a mix)
        if tensor.shape == stored.shape and difference(tensor, stored, tolerance) is None:
            return description
    return None


def neighbours(spec: AudioSpec, file_rate: int | None) -> Iterator[Edit]:
    yield from _changed(spec, file_rate)
    yield from _dropped(spec)
    yield from _added(spec, file_rate)
    yield from _swapped(spec)


def _with(spec: AudioSpec, steps: list[Step]) -> AudioSpec:
    return replace(spec, steps=tuple(steps))


def _changed(spec: AudioSpec, file_rate: int | None) -> Iterator[Edit]:
    for i, step in enumerate(spec.steps):
        for value in _choices(step, file_rate):
            other = Step(step.name, value)
            steps = list(spec.steps)
            steps[i] = other
            yield f"with {other.words()} in place of {step.words()}", _with(spec, steps)


def _choices(step: Step, file_rate: int | None) -> Iterator[object]:
    """Other values of the step's parameters with finite choices, one parameter at a time."""
    params = dict(step.value) if isinstance(step.value, dict) else {}
    if step.name == "decode":
        yield {**params, "library": "wave" if params.get("library", "soundfile") == "soundfile" else "soundfile"}
    elif step.name == "mix":
        to = step.value if isinstance(step.value, str) else params.get("to", "mono")
        yield {"to": "first" if to == "mono" else "mono"}
    elif step.name == "resample":
        rates = [*RATES, *([file_rate] if file_rate else [])]
        yield from ({**params, "rate": r} for r in dict.fromkeys(rates) if r != params.get("rate"))
        yield {**params, "library": "scipy" if params.get("library", "soxr") == "soxr" else "soxr"}
        yield from ({**params, "quality": q} for q in QUALITIES if q != params.get("quality", "HQ"))
    elif step.name == "normalize":
        mode = step.value if isinstance(step.value, str) else params.get("mode")
        yield from ({"mode": m} for m in NORMALIZE if m != mode)
    elif step.name == "pad":
        yield from ({**params, "position": p} for p in POSITIONS if p != params.get("position", "start"))


def _dropped(spec: AudioSpec) -> Iterator[Edit]:
    for i, step in enumerate(spec.steps):
        if i > 0 and step.name not in ("layout", "cast"):
            yield f"without {step.words()}", _with(spec, [s for j, s in enumerate(spec.steps) if j != i])


def _added(spec: AudioSpec, file_rate: int | None) -> Iterator[Edit]:
    names = [s.name for s in spec.steps]
    tail = next((i for i, n in enumerate(names) if n in ("frames", "batch", "layout", "cast")), len(names))
    if "mix" not in names:
        for to in ("mono", "first"):
            yield _insert(spec, 1, Step("mix", {"to": to}))
    if "normalize" not in names:
        for mode in NORMALIZE:
            yield _insert(spec, tail, Step("normalize", {"mode": mode}))
    if "resample" not in names:
        at = names.index("mix") + 1 if "mix" in names else 1
        for rate in RATES:
            if rate != file_rate:
                yield _insert(spec, at, Step("resample", {"rate": rate}))


def _insert(spec: AudioSpec, at: int, step: Step) -> Edit:
    steps = list(spec.steps)
    steps.insert(at, step)
    where = f"after {steps[at - 1].words()}" if at > 0 else "first"
    return f"with {step.words()} added {where}", _with(spec, steps)


def _swapped(spec: AudioSpec) -> Iterator[Edit]:
    steps = spec.steps
    for i in range(1, len(steps) - 1):
        a, b = steps[i], steps[i + 1]
        if a.name == b.name:
            continue
        order = [*steps[:i], b, a, *steps[i + 2 :]]
        yield f"with {b.words()} before {a.words()} (the manifest has it after)", _with(spec, list(order))
