"""The image preprocessing a manifest declares, parsed from its typed block (no Pillow needed, no file read:
what `config:` and `import:` name was read before, by files.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from checker.manifest.model import image as m
from checker.manifest.model.core import Block
from checker.preprocess import fields as f
from checker.preprocess.checked import checked
from checker.preprocess.errors import CannotReproduce, PreprocessError
from checker.preprocess.image.hf_config import HfImageConfig
from checker.preprocess.image.origins import Origin
from checker.preprocess.image.steps import Step, steps_of, tensor_units

# The fixed-order fields: shorthand for a step list (shorthand.py); a block has these or `steps`, not both.
SHORTHAND_FIELDS = tuple(k for k in m.SHORTHAND if k != "config")


@dataclass(frozen=True)
class ShorthandResize:
    mode: str = "none"
    size: tuple[int, ...] = ()  # (h, w) for exact and fixed_height, (s,) for shorter_side and longer_side
    interpolation: str = "bilinear"
    library: str = "pillow"
    # How a side scaled by a factor is rounded: "nearest" per the manifest, "floor" as HF image processors do.
    rounding: str = "nearest"


@dataclass(frozen=True)
class ShorthandCrop:
    mode: str = "none"
    size: tuple[int, int] = (0, 0)
    # How an odd remainder splits: "floor" (the contract: the extra row and column go bottom and right, as in
    # Hugging Face) or "half_even" (torchvision's CenterCrop rounds the offset half to even). Only the
    # fidelity explanations try the second.
    offset: str = "floor"


@dataclass(frozen=True)
class ShorthandPad:
    mode: str = "none"
    size: tuple[int, int] = (0, 0)
    value: tuple[float, ...] = (0.0,)  # pixel units (0-255), in the order of `color`


@dataclass(frozen=True)
class ImageSpec:
    color: str = "RGB"
    resize: ShorthandResize = ShorthandResize()
    crop: ShorthandCrop = ShorthandCrop()
    pad: ShorthandPad = ShorthandPad()
    scale: float = 1.0
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    tolerance: float | None = None
    exif: bool = True  # apply the EXIF orientation; only the fidelity explanations switch it off
    steps: tuple[Step, ...] | None = None  # the declared `steps`; None when the shorthand fields are used
    # An imported pipeline's entries, one per step (None for a step the importer adds): its explanations'
    # words. None when nothing was imported.
    origins: tuple[Origin | None, ...] | None = field(default=None, compare=False)

    @property
    def channels(self) -> int:
        return 1 if self.color == "GRAY" else 3

    @property
    def default_tolerance(self) -> float:
        """Two grey levels in tensor units: resampling code may round differently by that much."""
        if self.steps is not None:
            return 2 * tensor_units(self.steps)
        return 2 * abs(self.scale) / min(abs(s) for s in self.std)

    @property
    def tolerance_value(self) -> float:
        return self.default_tolerance if self.tolerance is None else self.tolerance


@dataclass(frozen=True)
class ImageBlock:
    """An image preprocessing block as typed, with what its `config:` or `import:` names already read from
    the bundle (files.py); parsing it reads no file."""

    prep: m.Image
    config: HfImageConfig | None = None  # the fields a `config:` file amounts to
    imported: tuple[Step, ...] | None = None  # the steps an `import:` file becomes
    origins: tuple[Origin | None, ...] | None = None  # where each imported step came from in that file


def parse_block(block: ImageBlock) -> ImageSpec:
    """Parse `inputs[].preprocessing` of kind image."""
    prep = block.prep
    if prep.steps is not None or prep.import_ is not None:
        return parse_step_spec(block)
    spec = parse_image(prep if block.config is None else merged_fields(block))
    return spec if block.origins is None else replace(spec, origins=block.origins)


def parse_step_spec(block: ImageBlock) -> ImageSpec:
    """A block written as `steps` (or imported from another tool's pipeline file into steps); the schema keeps
    the shorthand fields out of it."""
    prep = block.prep
    if block.imported is not None:
        return ImageSpec(steps=block.imported, tolerance=prep.tolerance, origins=block.origins)
    if prep.steps is None:
        raise PreprocessError("preprocessing.import is read from its file before the block is parsed")
    return ImageSpec(steps=steps_of(prep.steps), tolerance=prep.tolerance, origins=block.origins)


def merged_fields(block: ImageBlock) -> dict[str, Any]:
    """The shorthand fields the block writes over those its `config:` gives, as plain data (parse_image
    judges them together by the schema)."""
    explicit = _written(block.prep)
    hf = block.config
    if hf is None:
        return explicit
    refused = [why for key, why in hf.refusals.items() if key not in explicit]
    if refused:
        raise CannotReproduce("; ".join(refused))
    return _overlay(hf.fields, explicit)


def _written(prep: m.Image) -> dict[str, Any]:
    """The fields of a block that fill in its config (the shorthand fields and the tolerance) as plain data:
    those it gives (none has a default: an absent one is the config's)."""
    out: dict[str, Any] = {}
    for key in (*SHORTHAND_FIELDS, "tolerance"):
        value = getattr(prep, key)
        if isinstance(value, Block):
            value = {k: v for k in value.given or () if (v := getattr(value, k)) is not None}
        if value is not None:
            out[key] = value
    return out


def _overlay(base: dict[str, Any], explicit: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in explicit.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merged = {**base[key], **value}
            if key == "resize" and ("mode" in value or "size" in value):
                merged.pop("rounding", None)  # the config's rounding belongs to the config's resize
            out[key] = merged
        else:
            out[key] = value
    return out


def parse_image(prep: m.Image | dict[str, Any]) -> ImageSpec:
    """The shorthand fields of a typed block, or of plain data (a Hugging Face config's, a test's), which the
    schema judges first."""
    rounding = ShorthandResize.rounding
    if not isinstance(prep, m.Image):
        fields, rounding = _rounding(prep)
        prep = checked(m.Image, {"kind": "image", **fields}, "preprocessing")
    assert isinstance(prep, m.Image)
    spec = ImageSpec(
        color=prep.color or ImageSpec.color,
        scale=ImageSpec.scale if prep.scale is None else prep.scale,
        tolerance=prep.tolerance,
        resize=_resize(prep.resize, rounding),
        crop=_crop(prep.crop),
        pad=_pad(prep.pad),
        mean=ImageSpec.mean if prep.mean is None else f.numbers(prep.mean, "preprocessing.mean"),
        std=ImageSpec.std if prep.std is None else f.numbers(prep.std, "preprocessing.std"),
    )
    _check_channels(spec)
    _check_finite(spec)
    return spec


def _rounding(prep: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The fields less `resize.rounding`, and that rounding: what a Hugging Face config's resize says that no
    manifest field does (its processors truncate a computed side, where the shorthand rounds it)."""
    resize = prep.get("resize")
    if not isinstance(resize, dict) or "rounding" not in resize:
        return prep, ShorthandResize.rounding
    rest = {k: v for k, v in resize.items() if k != "rounding"}
    rounding = resize["rounding"]
    if rounding not in ("nearest", "floor"):
        raise PreprocessError(f"preprocessing.resize.rounding is {rounding!r}; expected nearest or floor")
    return {**prep, "resize": rest}, rounding


def _resize(r: m.ShorthandResize | None, rounding: str) -> ShorthandResize:
    where = "preprocessing.resize"
    if r is None:
        return ShorthandResize(rounding=rounding)
    mode = r.mode or ShorthandResize.mode
    size: tuple[int, ...] = ()
    if mode in ("exact", "fixed_height"):
        size = f.size_hw(r.size, f"{where}.size")
    elif mode in ("shorter_side", "longer_side"):
        size = (f.single_side(r.size, f"{where}.size"),)
    return ShorthandResize(
        mode=mode,
        size=size,
        interpolation=r.interpolation or ShorthandResize.interpolation,
        library=r.library or ShorthandResize.library,
        rounding=rounding,
    )


def _crop(c: m.ShorthandCrop | None) -> ShorthandCrop:
    if c is None or c.mode in (None, "none"):
        return ShorthandCrop()
    return ShorthandCrop(c.mode, f.size_hw(c.size, "preprocessing.crop.size"))


def _pad(p: m.ShorthandPad | None) -> ShorthandPad:
    if p is None or p.mode in (None, "none"):
        return ShorthandPad()
    size = f.size_hw(p.size, "preprocessing.pad.size")
    value = ShorthandPad.value if p.value is None else f.numbers(p.value, "preprocessing.pad.value")
    return ShorthandPad(p.mode, size, value)


def _check_channels(spec: ImageSpec) -> None:
    for name, values in (("mean", spec.mean), ("std", spec.std), ("pad.value", spec.pad.value)):
        if len(values) not in (1, spec.channels):
            raise PreprocessError(
                f"preprocessing.{name} has {len(values)} values; {spec.color} has {spec.channels} channel(s)"
            )
    if any(s == 0 for s in spec.std):
        raise PreprocessError("preprocessing.std holds a zero")
    if spec.scale == 0:
        raise PreprocessError("preprocessing.scale is zero")


def _check_finite(spec: ImageSpec) -> None:
    """An overflowing scale or a vanishing std makes every tensor infinite and the default tolerance too: then
    nothing could fail the fidelity or range checks."""
    ends = [(v - m) / s for v in (0.0, 255 * spec.scale) for m in spec.mean for s in spec.std]
    if not all(math.isfinite(x) for x in (*ends, spec.default_tolerance)):
        raise PreprocessError(
            "preprocessing.scale, mean and std overflow: (x * scale - mean) / std is infinite for some pixel value"
        )
