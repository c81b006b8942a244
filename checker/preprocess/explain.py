"""Naming the edit of the declared preprocessing that turns the declared tensor into the stored one.

For images, the alternatives are the one-edit neighbours of the declared step list (neighbours.py: a swap,
a step left out or added, one parameter changed, the pad value inferred), and, for the shorthand fields, a
few whole-pipeline mistakes no single edit makes (a letterbox for a crop, another layout). For text, the
usual tokenization mistakes. The first that reproduces the stored tensor within tolerance explains it. The
search is bounded: at most 64 neighbours, one decode per raw file, and a time bound per mismatch.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from checker.preprocess.difference import difference
from checker.preprocess.errors import PreprocessError
from checker.preprocess.neighbours import inferred_value, neighbours, pad_value_candidates
from checker.preprocess.pipeline import tensor_units
from checker.preprocess.rebuild import ImageSource, TextSource
from checker.preprocess.shorthand import spec_steps
from checker.preprocess.spec_image import Crop, ImageSpec, Pad
from checker.preprocess.steps import Layout, Step
from checker.preprocess.steps import Pad as PadStep
from checker.preprocess.text import TextSpec

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
LETTERBOX_VALUES = (114.0, 0.0, 128.0, 127.0, 255.0)
# Classification pipelines usually resize the shorter side to 256 before a 224 crop.
CROP_MARGIN = 256 / 224


@dataclass(frozen=True)
class Alternative:
    description: str  # completes "the stored tensor matches the declared preprocessing ..."
    build: Callable[[], np.ndarray]
    tolerance: float
    also: tuple[int, str] | None = None  # one of a run of equivalent edits (Neighbour.also)


# Past this, an explanation search gives up and says where the tensors differ.
TIME_BOUND_SECONDS = 10.0


@dataclass(frozen=True)
class Search:
    """What an explanation search found: the alternative that explains the stored tensor, or none; and, when
    the time bound cut it short, how many alternatives it had tried (the verdict must not read as if all were)."""

    found: str | None = None
    stopped_after: int | None = None
    bound_s: float = 0.0  # the time bound that stopped it


def explain(alternatives: Iterable[Alternative], stored: np.ndarray, first: bool = False) -> Search:
    clock = _Clock(time.monotonic() + TIME_BOUND_SECONDS)
    pending = iter(alternatives)
    for tried, alt in enumerate(pending):
        if clock.expired():
            return Search(stopped_after=tried, bound_s=TIME_BOUND_SECONDS)
        if clock.reproduces(alt, stored, first):
            return Search(found=alt.description + _also(alt, pending, stored, first, clock))
    return Search()


@dataclass
class _Clock:
    """The search's time bound. A build that imports a library (torch takes seconds to import) does not count
    against it: the bound is on the search, and a library is imported once per run."""

    deadline: float

    def expired(self) -> bool:
        return time.monotonic() > self.deadline

    def reproduces(self, alt: Alternative, stored: np.ndarray, first: bool) -> bool:
        modules, started = len(sys.modules), time.monotonic()
        try:
            tensor = alt.build()
        except PreprocessError:
            return False  # this variation cannot be built (e.g. no pad token); try the next
        finally:
            if len(sys.modules) > modules:
                self.deadline += time.monotonic() - started
        return tensor.shape == stored.shape and difference(tensor, stored, alt.tolerance, first) is None


def _also(alt: Alternative, pending: Iterator[Alternative], stored: np.ndarray, first: bool, clock: _Clock) -> str:
    """The other edits of `alt`'s run that reproduce the stored tensor too (another library that agrees)."""
    if alt.also is None:
        return ""
    words = []
    for other in pending:
        if other.also is None or other.also[0] != alt.also[0] or clock.expired():
            break
        if clock.reproduces(other, stored, first):
            words.append(f"`{other.also[1]}`")
    return f"; {' or '.join(words)} reproduces it as well" if words else ""


# Images


def image_alternatives(src: ImageSource, stored: np.ndarray, tolerance: float) -> Iterator[Alternative]:
    spec = src.spec

    def variant(description: str, alt: ImageSpec) -> Alternative:
        # A custom tolerance keeps its ratio to the default one in the variant's units.
        tol = tolerance * alt.default_tolerance / spec.default_tolerance
        return Alternative(description, lambda: src.build(alt)[src.target.name], tol)

    if spec.steps is None:  # the shorthand's own words first, for the mistakes they can name
        for description, alt in (*_channel_variants(spec), *_scale_variants(spec), *_normalisation_variants(spec)):
            yield variant(description, alt)
    yield from step_alternatives(src, stored, tolerance)
    if spec.steps is None:
        for description, alt in _geometry_variants(spec, _spatial(src, stored)):
            yield variant(description, alt)
    yield from _layout_variants(src, stored, tolerance)


def step_alternatives(src: ImageSource, stored: np.ndarray, tolerance: float) -> Iterator[Alternative]:
    """The one-edit neighbours of the declared steps, then the pad values inferred from the stored tensor."""
    declared = spec_steps(src.spec)
    unit = tensor_units(declared)
    batch = _stored_batch(src, stored)
    where = "" if src.spec.steps is not None else _SHORTHAND_NOTE

    def build(steps: tuple[Step, ...]) -> Callable[[], np.ndarray]:
        return lambda: src.build_steps(steps)

    for n in neighbours(declared, src.decoded.orientation, batch):
        yield Alternative(n.description + where, build(n.steps), tolerance * tensor_units(n.steps) / unit, n.also)
    for i, pad in pad_value_candidates(declared):
        alt = _pad_value(src, declared, i, pad, stored, tolerance)
        if alt is not None:
            yield Alternative(alt.description + where, alt.build, alt.tolerance)


_SHORTHAND_NOTE = " (in the steps the shorthand fields expand to: checker preprocess --show-steps)"


def _stored_batch(src: ImageSource, stored: np.ndarray) -> int | None:
    layout = src.layout
    if "N" not in layout or stored.ndim != len(layout):
        return None
    return int(stored.shape[layout.index("N")])


def _pad_value(
    src: ImageSource, steps: tuple[Step, ...], i: int, pad: PadStep, stored: np.ndarray, tolerance: float
) -> Alternative | None:
    def with_value(value: tuple[float, ...]) -> tuple[Step, ...]:
        return (*steps[:i], replace(pad, value=value), *steps[i + 1 :])

    try:
        t0, t1 = src.build_steps(with_value((0.0,))), src.build_steps(with_value((1.0,)))
    except PreprocessError:
        return None
    layout = next((s.layout for s in steps if isinstance(s, Layout)), src.layout)
    axis = layout.index("C") if "C" in layout and stored.ndim == len(layout) else None
    value = inferred_value(t0, t1, stored, axis)
    if value is None or value == pad.value:
        return None
    shown = _values(value) if len(value) == 1 else f"[{_values(value)}]"
    description = f"when `pad` has `value: {shown}` (the manifest has {_values(pad.value)})"
    steps_v = with_value(value)
    return Alternative(description, lambda: src.build_steps(steps_v), tolerance)


def _channel_variants(spec: ImageSpec) -> Iterator[tuple[str, ImageSpec]]:
    if spec.channels != 3:
        return
    other = "BGR" if spec.color == "RGB" else "RGB"
    description = f"with channels reversed ({other} where {spec.color} is declared)"
    yield description, replace(spec, color=other)
    # The whole channel axis reversed: the per-channel mean and std travel with their channels.
    yield description, replace(spec, color=other, mean=spec.mean[::-1], std=spec.std[::-1])


def _scale_variants(spec: ImageSpec) -> Iterator[tuple[str, ImageSpec]]:
    if abs(spec.scale * 255 - 1) < 1e-3:
        yield (
            "with pixel values in 0-255 where 0-1 is declared (scale 1, not 1/255)",
            replace(spec, scale=1.0),
        )
    elif spec.scale == 1:
        yield (
            "with pixel values in 0-1 where 0-255 is declared (scale 1/255, not 1)",
            replace(spec, scale=1 / 255),
        )
    else:
        for factor in (255, 1 / 255):
            alt = replace(spec, scale=spec.scale * factor)
            yield f"with scale {alt.scale:g} where {spec.scale:g} is declared", alt


def _normalisation_variants(spec: ImageSpec) -> Iterator[tuple[str, ImageSpec]]:
    if any(m != 0 for m in spec.mean) or any(s != 1 for s in spec.std):
        yield "without the mean/std normalisation", replace(spec, mean=(0.0,), std=(1.0,))
    elif spec.channels == 3:
        unit = 255 * spec.scale  # ImageNet statistics are in 0-1 units
        mean, std = tuple(m * unit for m in IMAGENET_MEAN), tuple(s * unit for s in IMAGENET_STD)
        yield "with ImageNet mean/std normalisation, which is not declared", replace(spec, mean=mean, std=std)


def _spatial(src: ImageSource, stored: np.ndarray) -> tuple[int, int] | None:
    layout = src.layout
    if stored.ndim != len(layout):
        return None
    return int(stored.shape[layout.index("H")]), int(stored.shape[layout.index("W")])


def geometry_name(spec: ImageSpec) -> str:
    parts = []
    if spec.resize.mode != "none":
        size = "x".join(str(s) for s in spec.resize.size)
        parts.append(f"{spec.resize.mode.replace('_', ' ')} resize to {size}")
    if spec.crop.mode == "center":
        parts.append(f"center crop {spec.crop.size[0]}x{spec.crop.size[1]}")
    if spec.pad.mode != "none":
        parts.append(f"{spec.pad.mode.replace('_', ' ')} pad to {spec.pad.size[0]}x{spec.pad.size[1]}")
    return ", ".join(parts) or "no resize"


def _geometry_variants(spec: ImageSpec, hw: tuple[int, int] | None) -> Iterator[tuple[str, ImageSpec]]:
    if hw is None or min(hw) < 1:
        return
    h, w = hw
    declared = f"where {geometry_name(spec)} is declared"
    plain = replace(spec, resize=replace(spec.resize, mode="none", size=()), crop=Crop(), pad=Pad())
    if spec.pad.mode != "letterbox":
        values = [(v,) for v in LETTERBOX_VALUES] if spec.pad.mode == "none" else [spec.pad.value]
        for value in values:
            pad = Pad("letterbox", (h, w), value)
            yield f"letterboxed to {h}x{w} (pad value {_values(value)}) {declared}", replace(plain, pad=pad)
    if spec.crop.mode != "center" or spec.resize.mode != "shorter_side":
        for side in dict.fromkeys((max(h, w), round(max(h, w) * CROP_MARGIN))):
            resize = replace(spec.resize, mode="shorter_side", size=(side,))
            alt = replace(plain, resize=resize, crop=Crop("center", (h, w)))
            yield f"resized (shorter side {side}) and center-cropped to {h}x{w} {declared}", alt
    if spec.crop.mode == "center":
        alt = replace(spec, crop=replace(spec.crop, offset="half_even"))
        yield (
            (
                "center-cropped with the offset rounded half to even (as torchvision's CenterCrop does) where the "
                "contract's rounding down is declared"
            ),
            alt,
        )
    if (spec.resize.mode, spec.crop.mode, spec.pad.mode) != ("exact", "none", "none"):
        alt = replace(plain, resize=replace(spec.resize, mode="exact", size=(h, w)))
        yield f"resized to {h}x{w} without keeping the aspect ratio {declared}", alt


def _values(values: tuple[float, ...]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def _layout_variants(src: ImageSource, stored: np.ndarray, tolerance: float) -> Iterator[Alternative]:
    layout = src.layout
    if "C" not in layout:
        return
    spatial = layout.replace("C", "")
    for other in (spatial.replace("H", "CH"), spatial.replace("W", "WC")):
        if other != layout:
            order = [layout.index(a) for a in other]

            def build(order: list[int] = order) -> np.ndarray:
                return np.transpose(src.build()[src.target.name], order)

            yield Alternative(f"in {other} layout where {layout} is declared", build, tolerance)


# Text


def text_alternatives(src: TextSource, target: str, stored: np.ndarray) -> Iterator[Alternative]:
    spec = src.spec

    def variant(description: str, alt: TextSpec, text: str | None = None) -> Alternative:
        return Alternative(description, lambda: src.build(alt, text)[target], 0.0)

    if spec.template is not None:
        yield variant("without the template", replace(spec, template=None))
    toggled = replace(spec, special_tokens=not spec.special_tokens)
    yield variant(f"{'without' if spec.special_tokens else 'with'} the tokenizer's special tokens", toggled)
    if src.line_break:
        yield variant("with the raw file's final line break kept", spec, src.text + src.line_break)
    if stored.ndim >= 1:
        for description, alt in _length_variants(spec, int(stored.shape[-1])):
            yield variant(description, alt)


def _length_variants(spec: TextSpec, length: int) -> Iterator[tuple[str, TextSpec]]:
    declared = f"(declared: padding {spec.padding}, truncation {str(spec.truncation).lower()}, " + (
        f"max_length {spec.max_length})"
    )
    yield f"without padding or truncation {declared}", replace(spec, padding="none", truncation=False)
    yield (
        f"truncated to {length} tokens {declared}",
        replace(spec, max_length=length, padding="none", truncation=True),
    )
    yield (
        f"padded to {length} tokens {declared}",
        replace(spec, max_length=length, padding="max_length", truncation=False),
    )
    yield (
        f"padded and truncated to {length} tokens {declared}",
        replace(spec, max_length=length, padding="max_length", truncation=True),
    )
