"""The image preprocessing a manifest declares, parsed and validated (no Pillow needed, no file read: what
`config:` and `import:` name was read before, by files.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from checker.preprocess import fields as f
from checker.preprocess.errors import CannotReproduce, PreprocessError
from checker.preprocess.image.hf_config import HfImageConfig
from checker.preprocess.image.origins import Origin
from checker.preprocess.image.steps import Step, parse_steps, tensor_units

# The fixed-order fields: shorthand for a step list (shorthand.py); a block has these or `steps`, not both.
SHORTHAND_FIELDS = ("color", "resize", "crop", "pad", "scale", "mean", "std")

COLORS = ("RGB", "BGR", "GRAY")
RESIZE_MODES = ("none", "exact", "shorter_side", "longer_side", "fixed_height")
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming")
LIBRARIES = ("pillow", "opencv", "torch")


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
    """An image preprocessing block as written, with what its `config:` or `import:` names already read from
    the bundle (files.py); parsing it reads no file."""

    prep: dict[str, Any]
    config: HfImageConfig | None = None  # the fields a `config:` file amounts to
    imported: tuple[Step, ...] | None = None  # the steps an `import:` file becomes
    origins: tuple[Origin | None, ...] | None = None  # where each imported step came from in that file


def parse_block(block: ImageBlock) -> ImageSpec:
    """Parse `inputs[].preprocessing` of kind image."""
    prep = block.prep
    if "steps" in prep or "import" in prep:
        return parse_step_spec(block)
    spec = parse_image(merged_fields(block))
    return spec if block.origins is None else replace(spec, origins=block.origins)


def parse_step_spec(block: ImageBlock) -> ImageSpec:
    """A block written as `steps` (or imported from another tool's pipeline file into steps)."""
    prep = block.prep
    both = [k for k in (*SHORTHAND_FIELDS, "config") if k in prep]
    if both:
        raise PreprocessError(
            f"preprocessing has both steps and the shorthand field(s) {', '.join(both)}; write one or the other"
        )
    if "steps" in prep and "import" in prep:
        raise PreprocessError("preprocessing has both steps and import; write one or the other")
    steps = block.imported if block.imported is not None else parse_steps(prep["steps"])
    return ImageSpec(steps=steps, tolerance=_tolerance(prep.get("tolerance")), origins=block.origins)


def merged_fields(block: ImageBlock) -> dict[str, Any]:
    explicit = {k: v for k, v in block.prep.items() if k not in ("kind", "config")}
    hf = block.config
    if hf is None:
        return explicit
    refused = [why for key, why in hf.refusals.items() if key not in explicit]
    if refused:
        raise CannotReproduce("; ".join(refused))
    return _overlay(hf.fields, explicit)


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


def parse_image(prep: dict[str, Any]) -> ImageSpec:
    color = f.choice(prep, "color", COLORS, "RGB", "preprocessing")
    spec = ImageSpec(
        color=color,
        resize=_resize(f.mapping(prep.get("resize"), "preprocessing.resize")),
        crop=_crop(f.mapping(prep.get("crop"), "preprocessing.crop")),
        pad=_pad(f.mapping(prep.get("pad"), "preprocessing.pad")),
        scale=f.number(prep.get("scale", 1.0), "preprocessing.scale"),
        mean=f.numbers(prep.get("mean", 0.0), "preprocessing.mean"),
        std=f.numbers(prep.get("std", 1.0), "preprocessing.std"),
        tolerance=_tolerance(prep.get("tolerance")),
    )
    _check_channels(spec)
    _check_finite(spec)
    return spec


def _resize(d: dict[str, Any]) -> ShorthandResize:
    where = "preprocessing.resize"
    mode = f.choice(d, "mode", RESIZE_MODES, "none", where)
    size: tuple[int, ...] = ()
    if mode in ("exact", "fixed_height"):
        size = f.size_hw(d.get("size"), f"{where}.size")
    elif mode in ("shorter_side", "longer_side"):
        size = (f.single_side(d.get("size"), f"{where}.size"),)
    return ShorthandResize(
        mode=mode,
        size=size,
        interpolation=f.choice(d, "interpolation", INTERPOLATIONS, "bilinear", where),
        library=f.choice(d, "library", LIBRARIES, "pillow", where),
        rounding=f.choice(d, "rounding", ("nearest", "floor"), "nearest", where),
    )


def _crop(d: dict[str, Any]) -> ShorthandCrop:
    mode = f.choice(d, "mode", ("none", "center"), "none", "preprocessing.crop")
    if mode == "none":
        return ShorthandCrop()
    return ShorthandCrop(mode, f.size_hw(d.get("size"), "preprocessing.crop.size"))


def _pad(d: dict[str, Any]) -> ShorthandPad:
    mode = f.choice(d, "mode", ("none", "letterbox", "bottom_right"), "none", "preprocessing.pad")
    if mode == "none":
        return ShorthandPad()
    size = f.size_hw(d.get("size"), "preprocessing.pad.size")
    return ShorthandPad(mode, size, f.numbers(d.get("value", 0), "preprocessing.pad.value"))


def _tolerance(value: Any) -> float | None:
    if value is None:
        return None
    tol = f.number(value, "preprocessing.tolerance")
    if tol < 0:
        raise PreprocessError(f"preprocessing.tolerance is {tol}; expected a number >= 0")
    return tol


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
