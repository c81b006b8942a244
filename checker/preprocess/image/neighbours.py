"""The one-edit neighbours of a declared step list, for explaining a stored tensor that differs from it.

A neighbour is the declared list with one edit: two adjacent steps swapped, one step left out or added, or
one parameter changed within its finite choices (a change of library takes the filter's counterpart). Each
comes with the words that name the edit as the manifest would write it. The pad value is not guessed from a
list: explain_pad_value infers it from the stored tensor.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from checker.preprocess.image.condition import When
from checker.preprocess.image.steps import (
    ARITHMETICS,
    FILTERS,
    JPEG_DEFAULT_QUALITY,
    POSITIONS,
    REGISTRY,
    ROUNDINGS,
    SUBSAMPLINGS,
    Batch,
    Cast,
    Convert,
    Crop,
    Decode,
    Jpeg,
    Layout,
    Normalize,
    Pad,
    Resize,
    Scale,
    Step,
    counterpart,
)
from checker.preprocess.registry import NO_CHANGES

MAX_NEIGHBOURS = 96  # a conditional geometry (PP-OCR's detector) has some 70 one-edit neighbours


@dataclass(frozen=True)
class Edit:
    """Which edit a neighbour is, for saying it in an imported file's words (origins.py): `kind` is change,
    swap (the step at `at` and the next), drop or add; `at` is the index in the declared list."""

    kind: str
    at: int


@dataclass(frozen=True)
class Neighbour:
    description: str  # completes "the stored tensor matches the declared preprocessing ..."
    steps: tuple[Step, ...]
    edit: Edit | None = None  # which kind of edit, for an imported pipeline's own words (origins.py)


def neighbours(steps: tuple[Step, ...], orientation: int, stored_batch: int | None) -> Iterator[Neighbour]:
    """At most MAX_NEIGHBOURS one-edit neighbours, the likeliest edits first."""
    found = 0
    seen = {steps}
    for n in _all(steps, orientation, stored_batch):
        if n.steps in seen:
            continue
        seen.add(n.steps)
        yield n
        found += 1
        if found >= MAX_NEIGHBOURS:
            return


def _all(steps: tuple[Step, ...], orientation: int, stored_batch: int | None) -> Iterator[Neighbour]:
    for i, step in enumerate(steps):
        for changed, description in _parameter_changes(step, orientation, stored_batch):
            yield Neighbour(description, (*steps[:i], changed, *steps[i + 1 :]), Edit("change", i))
    for i in range(1, len(steps) - 1):
        a, b = steps[i], steps[i + 1]
        if type(a) is not type(b):
            yield Neighbour(
                f"when `{b.words()}` runs before `{a.name}` (the manifest has it after)",
                (*steps[:i], b, a, *steps[i + 2 :]),
                edit=Edit("swap", i),
            )
    for i in range(1, len(steps)):
        yield Neighbour(f"without `{steps[i].words()}`", (*steps[:i], *steps[i + 1 :]), edit=Edit("drop", i))
    yield from _additions(steps, stored_batch)


def _changed(step: Step, key: str, value: object, old: object | None = None) -> tuple[Step, str]:
    before = getattr(step, key) if old is None else old
    changed: Step = replace(step, **{key: value})  # type: ignore[type-var]
    return changed, f"when `{step.name}` has `{key}: {_word(value)}` (the manifest has {_word(before)})"


def _word(value: object) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_word(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or value == "":
        return "the default"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _parameter_changes(step: Step, orientation: int, stored_batch: int | None) -> Iterator[tuple[Step, str]]:
    yield from REGISTRY.changes_of(type(step))(step, orientation, stored_batch)


@REGISTRY.register_changes(Decode)
def _decode(step: Decode, orientation: int, _: int | None) -> Iterator[tuple[Step, str]]:
    if step.mode != "L":
        other = "BGR" if step.mode == "RGB" else "RGB"
        changed, description = _changed(step, "mode", other)
        yield changed, f"with channels reversed ({other} where {step.mode} is declared): {description}"
    if orientation != 1:
        changed, description = _changed(step, "exif", not step.applies_exif, step.applies_exif)
        state = "ignored" if step.applies_exif else "applied"
        yield changed, f"with the EXIF orientation {state} (the file's tag is {orientation}): {description}"
    yield _changed(step, "library", "opencv" if step.library == "pillow" else "pillow")


@REGISTRY.register_changes(Convert)
def _convert(step: Convert, _: int, __: int | None) -> Iterator[tuple[Step, str]]:
    if step.to in ("RGB", "BGR"):
        yield _changed(step, "to", "BGR" if step.to == "RGB" else "RGB")
    else:
        yield _changed(step, "formula", "opencv" if step.formula == "pillow" else "pillow")


@REGISTRY.register_changes(Resize)
def _resize(step: Resize, _: int, __: int | None) -> Iterator[tuple[Step, str]]:
    yield from _conditions(step)
    yield from _geometries(step)
    if step.ppocr_line is None and step.size is None:
        for rounding in ROUNDINGS:
            if rounding != step.rounding:
                yield _changed(step, "rounding", rounding)
        yield from _multiples(step)
    # A manifest that leaves `library` out (Pillow) most likely forgot the application's library; one that names
    # a library most likely has its filter or antialias wrong, which another library may happen to match too.
    if step.library == "pillow":
        yield from _other_libraries(step)
        yield from _own_filters(step)
    else:
        yield from _own_filters(step)
        yield from _other_libraries(step)
    if step.size is None:
        for arithmetic in ARITHMETICS:
            if arithmetic != step.arithmetic:
                yield _changed(step, "arithmetic", arithmetic)


# The geometries one target reads as: a square `size` is the box a `fit` fills and the side a `shorter_side`
# or `longer_side` reaches; what an application that keeps the aspect ratio and one that squashes share.
_BOXED = ("size", "shorter_side", "fit", "longer_side")


def _geometries(step: Resize) -> Iterator[tuple[Step, str]]:
    """The resize's target read as each other geometry of `_BOXED`: `size: [256, 256]` where `shorter_side:
    256` is declared (the application squashes to a square), `fit` for `size` (it keeps the aspect ratio)."""
    box = step.size or step.fit
    side = step.shorter_side or step.longer_side
    if box is not None:
        h, w = box
    elif side is not None:
        h = w = side
    else:
        return
    current = next(g for g in _BOXED if getattr(step, g) is not None)
    cleared = replace(
        step,
        size=None,
        shorter_side=None,
        max_longer=None,
        longer_side=None,
        fit=None,
        min_width=None,
        max_width=None,
        min_height=None,
        max_height=None,
    )
    choices: tuple[tuple[str, Resize, object], ...] = (
        # a size is the size itself: no multiple, no rounding
        (
            "size",
            replace(cleared, size=(h, w), multiple_of=None, multiple_of_rounding=None, rounding="half_up"),
            (h, w),
        ),
        ("shorter_side", replace(cleared, shorter_side=min(h, w)), min(h, w)),
        ("fit", replace(cleared, fit=(h, w)), (h, w)),
        ("longer_side", replace(cleared, longer_side=max(h, w)), max(h, w)),
    )
    was = _word(getattr(step, current))
    for geometry, changed, value in choices:
        if geometry != current:
            yield changed, f"when `resize` has `{geometry}: {_word(value)}` (the manifest has `{current}: {was}`)"


# The strides detectors and vision transformers round their sides to, tried on a resize that rounds to none.
STRIDES = (32, 16, 64, 8, 14)


def _multiples(step: Resize) -> Iterator[tuple[Step, str]]:
    """Another rounding of the multiple; or, for a resize to no multiple, a multiple of a usual stride (32 with
    each rounding, since Python's `round` is half-even where the step's own rounding may not be)."""
    if step.multiple_of is not None:
        current = step.multiple_of_rounding or step.rounding
        for other in ROUNDINGS:
            if other != current:
                yield _changed(step, "multiple_of_rounding", other, current)
        return
    for n in STRIDES:
        choices: tuple[str | None, ...] = (None, *ROUNDINGS) if n == STRIDES[0] else (None,)
        for rounding in choices:
            if rounding == step.rounding:
                continue
            changed = replace(step, multiple_of=n, multiple_of_rounding=rounding)
            said = f"multiple_of: {n}" + ("" if rounding is None else f", multiple_of_rounding: {rounding}")
            yield changed, f"when `resize` has `{said}` (the manifest has no multiple_of)"


def _conditions(step: Resize | Crop | Pad) -> Iterator[tuple[Step, str]]:
    """The one-edit changes of a step's `when` (each limit ±1, each strictness switched, each comparison
    dropped); for a resize without one, its own target as the limit: only larger images shrunk, or only smaller
    ones enlarged (PaddleOCR's detector shrinks only an image whose longer side exceeds 960)."""
    if step.when is None:
        for when in _resize_limits(step) if isinstance(step, Resize) else ():
            changed = replace(step, when=when)
            yield changed, f"when `{step.name}` has `when: {when.words()}` (the manifest has none: it always runs)"
        return
    for edit in step.when.edits():
        changed = replace(step, when=edit)
        if edit is None:
            yield changed, f"when `{step.name}` has no `when` (the manifest has {step.when.words()}): it always runs"
        else:
            yield changed, f"when `{step.name}` has `when: {edit.words()}` (the manifest has {step.when.words()})"


def _resize_limits(step: Resize) -> Iterator[When]:
    for measure, target in (("longer_side", step.longer_side), ("shorter_side", step.shorter_side)):
        if target is not None:
            yield When(((measure, "gt", target),))
            yield When(((measure, "lt", target),))
    for measure, target in (("height", step.height), ("width", step.width)):
        if target is not None:
            yield When(((measure, "gt", target),))


def _other_libraries(step: Resize) -> Iterator[tuple[Step, str]]:
    for library in FILTERS:
        if library == step.library or library == "torch":
            continue
        filt = counterpart(step.filter_name, step.library, library)
        if filt is not None:
            changed = replace(step, library=library, filter=filt)
            yield (
                changed,
                (
                    f"when `resize` has `library: {library}, filter: {filt}` "
                    f"(the manifest has {step.library}, {step.filter_name})"
                ),
            )


def _own_filters(step: Resize) -> Iterator[tuple[Step, str]]:
    if step.library == "torchvision":
        yield _changed(step, "antialias", not step.antialias)
    for filt in FILTERS[step.library]:
        if filt != step.filter_name:
            yield _changed(step, "filter", filt, step.filter_name)


@REGISTRY.register_changes(Crop)
def _crop(step: Crop, _: int, __: int | None) -> Iterator[tuple[Step, str]]:
    yield from _conditions(step)
    if step.center is not None:
        other = "half_even" if step.offset_rounding == "floor" else "floor"
        changed, description = _changed(step, "offset_rounding", other)
        if other == "half_even":
            description += (
                ": the offset rounded half to even, and an odd padding row or column after the image, as "
                "torchvision's CenterCrop does"
            )
        yield changed, description


@REGISTRY.register_changes(Pad)
def _pad(step: Pad, _: int, __: int | None) -> Iterator[tuple[Step, str]]:
    yield from _conditions(step)
    for position in POSITIONS:
        if position != step.position:
            yield _changed(step, "position", position)
    yield _changed(step, "odd", "start" if step.odd == "end" else "end")
    if step.mode != "edge":
        yield _changed(step, "mode", "edge")


@REGISTRY.register_changes(Jpeg)
def _jpeg(step: Jpeg, _: int, __: int | None) -> Iterator[tuple[Step, str]]:
    """The other subsamplings, the other library (at the same quality), each library's default quality and
    5 either side of the declared one."""
    for sampling in SUBSAMPLINGS:
        if sampling != step.subsampling:
            yield _changed(step, "subsampling", sampling)
    other = "opencv" if step.library == "pillow" else "pillow"
    yield _changed(replace(step, quality=step.quality_used), "library", other)
    qualities = (*JPEG_DEFAULT_QUALITY.values(), step.quality_used - 5, step.quality_used + 5)
    for quality in dict.fromkeys(q for q in qualities if 1 <= q <= 100 and q != step.quality_used):
        yield _changed(step, "quality", quality, step.quality_used)


@REGISTRY.register_changes(Scale)
def _scale(step: Scale, _: int, __: int | None) -> Iterator[tuple[Step, str]]:
    for factor in (step.factor * 255, step.factor / 255):
        changed = Scale(factor)
        yield changed, f"with `{changed.words()}` (the manifest has {step.factor:.10g})"


@REGISTRY.register_changes(Batch)
def _batch(step: Batch, _: int, stored_batch: int | None) -> Iterator[tuple[Step, str]]:
    if stored_batch is not None and stored_batch != step.repeat:
        yield _changed(step, "repeat", stored_batch)


@REGISTRY.register_changes(Normalize)
def _normalize(step: Normalize, _: int, __: int | None) -> Iterator[tuple[Step, str]]:
    # Per-channel constants written in the other order of colour: ImageNet's RGB mean and std applied to the
    # BGR arrays of OpenCV code (PaddleOCR does).
    if step.mean != step.std and (any(m != 0 for m in step.mean) or any(v != 1 for v in step.std)):
        # the two lists copied into each other's places: a frequent copy error
        swapped = Normalize(mean=step.std, std=step.mean)
        if all(v != 0 for v in swapped.std):
            yield swapped, f"when `normalize` has its mean and std swapped (`{swapped.words()}`)"
    if len(step.mean) == 3 or len(step.std) == 3:
        changed = replace(step, mean=step.mean[::-1], std=step.std[::-1])
        if changed != step:
            yield (
                changed,
                f"when `normalize` has its mean and std in the other channel order (`{changed.words()}`; the "
                "manifest gives them in the order of the declared colour)",
            )


# A cast's dtype and a layout have no usual mistake among finite choices; another layout is tried for the whole
# tensor (explain.py).
REGISTRY.register_changes(Cast)(NO_CHANGES)
REGISTRY.register_changes(Layout)(NO_CHANGES)


def _additions(steps: tuple[Step, ...], stored_batch: int | None) -> Iterator[Neighbour]:
    """One step added where applications usually have it."""
    kinds = {type(s) for s in steps}
    if Scale not in kinds:
        yield from _scale_additions(steps)
    if Convert not in kinds:
        mode = steps[0].mode if isinstance(steps[0], Decode) else "RGB"
        for to in ("L", "BGR" if mode == "RGB" else "RGB"):
            if to != mode:
                added_c = Convert(to)
                yield Neighbour(f"with `{added_c.words()}` added after decode", (steps[0], added_c, *steps[1:]))
    stride = next((s.multiple_of for s in steps if isinstance(s, Resize) and s.multiple_of is not None), None)
    if Pad not in kinds and stride is not None:
        # a detector whose sides are multiples of a stride pads a smaller image up to one stride first
        added_p = Pad(at_least=(stride, stride), position="top_left")
        yield Neighbour(f"with `{added_p.words()}` added after decode", (steps[0], added_p, *steps[1:]))
    yield from _letterboxes(steps, kinds)
    if Jpeg not in kinds:
        yield from _jpeg_additions(steps)
    if Batch not in kinds and stored_batch is not None and stored_batch > 1:
        at = next((i for i, s in enumerate(steps) if isinstance(s, Layout)), len(steps))
        added_b = Batch(stored_batch)
        yield Neighbour(f"with `{added_b.words()}` added", (*steps[:at], added_b, *steps[at:]))


# The pad values letterboxes use, the likeliest first (YOLO's grey, black, mid-grey), in 0-255 units.
LETTERBOX_VALUES = (114.0, 0.0, 128.0)


def _letterboxes(steps: tuple[Step, ...], kinds: set[type[Step]]) -> Iterator[Neighbour]:
    """A missing letterbox: a `fit` resize padded to its box, or a `size` resize that keeps the aspect ratio
    (`fit`) and pads to the size; only before any value step, where the pad value is in 0-255 units."""
    if Pad in kinds:
        return
    for i, step in enumerate(steps):
        if not isinstance(step, Resize) or (step.fit is None and step.size is None) or step.when is not None:
            continue
        if any(isinstance(s, (Scale, Normalize, Cast)) for s in steps[:i]):
            return
        box = step.fit or step.size
        assert box is not None
        resized = replace(step, size=None, fit=box) if step.size is not None else step
        for value in LETTERBOX_VALUES:
            pad = Pad(to=box, value=(value,))
            added = (*steps[:i], resized, pad, *steps[i + 1 :])
            if step.size is not None:
                said = (
                    f"with the image letterboxed: `{resized.words()}`, then `{pad.words()}` (the manifest has `size`)"
                )
            else:
                said = f"with `{pad.words()}` added after `resize`: a letterbox"
            yield Neighbour(said, added, Edit("add", i + 1))
        return


def _jpeg_additions(steps: tuple[Step, ...]) -> Iterator[Neighbour]:
    """A JPEG round trip the application makes and the manifest leaves out, with each library's defaults:
    after the geometry, where an application re-encodes the image it is about to feed (before any value step,
    while the pixels are 8-bit)."""
    at = next((i for i, s in enumerate(steps) if isinstance(s, (Convert, Scale, Normalize, Cast, Layout, Batch))),
              len(steps))  # fmt: skip
    at = max(at, 1)
    for library in JPEG_DEFAULT_QUALITY:
        added = Jpeg(library=library)
        where = f" before `{steps[at].name}`" if at < len(steps) else " at the end"
        yield Neighbour(f"with `{added.words()}` added{where}", (*steps[:at], added, *steps[at:]), Edit("add", at))


def _scale_additions(steps: tuple[Step, ...]) -> Iterator[Neighbour]:
    """`scale: 1/255` added wherever a value step can stand: after decode and before a layout or cast (only a
    cast may follow a layout). The usual place first, before the first normalize or else the layout; then the
    others, since a scale before a resize or a pad is not the same tensor as after it."""
    added = Scale(1 / 255)
    last = next((i for i, s in enumerate(steps) if isinstance(s, (Layout, Cast))), len(steps))
    usual = next((i for i, s in enumerate(steps) if isinstance(s, Normalize)), last)
    for at in dict.fromkeys((usual, *range(last, 0, -1))):
        where = f" before `{steps[at].name}`" if at < len(steps) else " at the end"
        yield Neighbour(f"with `{added.words()}` added{where}", (*steps[:at], added, *steps[at:]))


def pad_value_candidates(steps: tuple[Step, ...]) -> Iterator[tuple[int, Pad]]:
    """The constant pad steps whose value explain_pad_value may infer."""
    for i, step in enumerate(steps):
        if isinstance(step, Pad) and step.mode == "constant":
            yield i, step


def inferred_value(
    t0: np.ndarray, t1: np.ndarray, stored: np.ndarray, channel_axis: int | None
) -> tuple[float, ...] | None:
    """The pad value (in the pad step's units) that the stored tensor holds where the padding is.

    t0 and t1 were built with the value 0 and 1; every later step is affine per element there (scale,
    normalize), so the value is (stored - t0) / (t1 - t0).
    """
    if t0.shape != stored.shape or t1.shape != stored.shape:
        return None
    a, b, s = (x.astype(np.float64) for x in (t0, t1, stored))
    mask = a != b
    if not mask.any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (s - a) / (b - a)
    if channel_axis is None:
        values = [float(np.median(v[mask]))]
    else:
        values = []
        for c in range(v.shape[channel_axis]):
            vc, mc = np.take(v, c, axis=channel_axis), np.take(mask, c, axis=channel_axis)
            if not mc.any():
                return None
            values.append(float(np.median(vc[mc])))
    if not all(np.isfinite(values)):
        return None
    rounded = tuple(round(x) if abs(x - round(x)) < 1e-3 else round(x, 4) for x in values)
    return (float(rounded[0]),) if len(set(rounded)) == 1 else tuple(float(x) for x in rounded)
