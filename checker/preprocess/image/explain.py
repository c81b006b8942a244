"""Naming the edit of an image input's declared preprocessing that turns the declared tensor into the stored one.

The alternatives are the one-edit neighbours of the declared step list (neighbours.py: a swap, a step left
out or added, one parameter changed, the pad value inferred), and, for the shorthand fields, a few
whole-pipeline mistakes no single edit makes (a letterbox for a crop, another layout). The search that tries
them is search.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.neighbours import Edit, Neighbour, inferred_value, neighbours, pad_value_candidates
from checker.preprocess.image.origins import Origin, in_source_words
from checker.preprocess.image.shorthand import spec_steps
from checker.preprocess.image.source import ImageSource
from checker.preprocess.image.spec import ImageSpec, ShorthandCrop, ShorthandPad
from checker.preprocess.image.steps import Layout, Pad, Step, tensor_units
from checker.preprocess.search import Alternative

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
LETTERBOX_VALUES = (114.0, 0.0, 128.0, 127.0, 255.0)
# Classification pipelines usually resize the shorter side to 256 before a 224 crop.
CROP_MARGIN = 256 / 224


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

    size = _spatial(src, stored)

    def build(steps: tuple[Step, ...]) -> Callable[[], np.ndarray]:
        return lambda: src.build_steps(steps, size)

    def then(first: Neighbour) -> Callable[[], Iterator[Alternative]]:
        """A second edit on top of `first`: the one-edit neighbours of its steps, said after its words."""

        def second() -> Iterator[Alternative]:
            for n in neighbours(first.steps, src.decoded.orientation, batch):
                if n.steps != declared:
                    words = f"{first.description}, and {n.description}{where}"
                    yield Alternative(words, build(n.steps), tolerance * tensor_units(n.steps) / unit)

        return second

    origins = src.spec.origins
    unsaid: list[Alternative] = []
    for n in neighbours(declared, src.decoded.orientation, batch):
        alt = Alternative(n.description + where, build(n.steps), tolerance * tensor_units(n.steps) / unit, then=then(n))
        if origins is None:
            yield alt
            continue
        # An imported pipeline: the edits its own file can say are tried first (a config's fixed order makes
        # "crop before resize" and "do_resize: false" the same tensor), the others after, in step words.
        own = in_source_words(n.edit, declared, n.steps, origins) if n.edit is not None else None
        if own is not None:
            yield replace(alt, description=own)
        else:
            note = where or f" (in the steps {_origin_file(origins)} is read into)"
            unsaid.append(replace(alt, description=n.description + note))
    yield from unsaid
    for i, pad in pad_value_candidates(declared):
        valued = _pad_value(src, declared, i, pad, stored, tolerance)
        if valued is not None:
            yield Alternative(valued.description + where, valued.build, valued.tolerance)


def _origin_file(origins: tuple[Origin | None, ...]) -> str:
    return next((o.file for o in origins if o is not None), "the imported file")


_SHORTHAND_NOTE = " (in the steps the shorthand fields expand to: checker preprocess --show-steps)"


def _stored_batch(src: ImageSource, stored: np.ndarray) -> int | None:
    layout = src.layout
    if "N" not in layout or stored.ndim != len(layout):
        return None
    return int(stored.shape[layout.index("N")])


def _pad_value(
    src: ImageSource, steps: tuple[Step, ...], i: int, pad: Pad, stored: np.ndarray, tolerance: float
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
    if src.spec.origins is not None:
        description = in_source_words(Edit("change", i), steps, steps_v, src.spec.origins) or description
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
    plain = replace(spec, resize=replace(spec.resize, mode="none", size=()), crop=ShorthandCrop(), pad=ShorthandPad())
    if spec.pad.mode != "letterbox":
        values = [(v,) for v in LETTERBOX_VALUES] if spec.pad.mode == "none" else [spec.pad.value]
        for value in values:
            pad = ShorthandPad("letterbox", (h, w), value)
            yield f"letterboxed to {h}x{w} (pad value {_values(value)}) {declared}", replace(plain, pad=pad)
    if spec.crop.mode != "center" or spec.resize.mode != "shorter_side":
        for side in dict.fromkeys((max(h, w), round(max(h, w) * CROP_MARGIN))):
            resize = replace(spec.resize, mode="shorter_side", size=(side,))
            alt = replace(plain, resize=resize, crop=ShorthandCrop("center", (h, w)))
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
