"""The fixed-order image fields (color, resize, crop, pad, scale, mean, std) as the step list they stand for.

One engine runs every image input: a manifest with shorthand fields means exactly the steps written here,
which `checker preprocess --show-steps` prints.
"""

from __future__ import annotations

from dataclasses import replace

from checker.preprocess.errors import CannotReproduce
from checker.preprocess.image.spec import ImageSpec
from checker.preprocess.image.steps import FILTERS, Crop, Decode, Normalize, Pad, Resize, Scale, Step, counterpart

_ROUNDING = {"nearest": "half_up", "floor": "floor"}


def spec_steps(spec: ImageSpec) -> tuple[Step, ...]:
    """The steps an image spec runs: its own `steps`, or the expansion of its shorthand fields."""
    return spec.steps if spec.steps is not None else expand(spec)


def expand(spec: ImageSpec) -> tuple[Step, ...]:
    mode = "L" if spec.color == "GRAY" else spec.color
    out: list[Step] = [Decode(mode=mode, exif=spec.exif)]
    library, filt = _library_filter(spec)
    r = spec.resize
    base = Resize(library=library, filter=filt)
    if r.mode == "exact":
        out.append(replace(base, size=(r.size[0], r.size[1])))
    elif r.mode == "shorter_side":
        out.append(replace(base, shorter_side=r.size[0], rounding=_ROUNDING[r.rounding]))
    elif r.mode == "longer_side":
        out.append(replace(base, longer_side=r.size[0], rounding=_ROUNDING[r.rounding]))
    elif r.mode == "fixed_height":
        out.append(replace(base, height=r.size[0], max_width=r.size[1]))
    if spec.crop.mode == "center":
        out.append(Crop(center=spec.crop.size, offset_rounding=spec.crop.offset, pad_if_smaller=(0.0,)))
    if spec.pad.mode == "letterbox":
        out.append(replace(base, fit=spec.pad.size))
        out.append(Pad(to=spec.pad.size, value=spec.pad.value))
    elif spec.pad.mode == "bottom_right":
        out.append(Pad(to=spec.pad.size, position="top_left", value=spec.pad.value))
    if spec.scale != 1:
        out.append(Scale(spec.scale))
    if any(m != 0 for m in spec.mean) or any(s != 1 for s in spec.std):
        out.append(Normalize(spec.mean, spec.std))
    return tuple(out)


def _library_filter(spec: ImageSpec) -> tuple[str, str]:
    """The shorthand's Pillow-style interpolation name as its library names it."""
    library, interpolation = spec.resize.library, spec.resize.interpolation
    filt = counterpart(interpolation, "pillow", library) if library != "torch" else interpolation
    resizes = spec.resize.mode != "none" or spec.pad.mode == "letterbox"
    if filt is None or filt not in FILTERS[library]:
        if not resizes:
            return "pillow", "bilinear"  # nothing is resized, so the library never runs
        raise CannotReproduce(f"resize.library is {library}, which has no {interpolation} interpolation")
    return library, filt
