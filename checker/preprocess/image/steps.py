"""The ordered image steps a manifest declares (`preprocessing.steps`): the runtime steps, each made from its
typed block (`MODEL`, in checker/manifest/model/image.py, whose fields, bounds and words the schema is
generated from), with what the schema cannot say checked here (one geometry, a filter of the library named).

Each step is a frozen dataclass that can say itself back in the manifest's words (`words`), so that
`checker preprocess --show-steps` and the fidelity explanations quote the manifest rather than paraphrase it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, get_args

import numpy as np

from checker.manifest.model import image as m
from checker.manifest.model.core import Block
from checker.preprocess import fields as f
from checker.preprocess.checked import checked
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.condition import When, when_of
from checker.preprocess.registry import Registry

MODES = get_args(m.Mode)
ROUNDINGS = get_args(m.Rounding)
ARITHMETICS = get_args(m.Arithmetic)
GEOMETRIES = ("size", "shorter_side", "longer_side", "height", "width", "fit", "scale", "ppocr_line")
# Each library's own filters, with no translation between them; the first is its default.
FILTERS: dict[str, tuple[str, ...]] = {
    "pillow": ("bilinear", "nearest", "bicubic", "lanczos", "box", "hamming"),
    "opencv": ("linear", "nearest", "nearest_exact", "cubic", "area", "lanczos4"),
    "torchvision": ("bilinear", "nearest", "nearest_exact", "bicubic"),
    # torch.nn.functional.interpolate on float pixels, no antialias: what the shorthand's `library: torch` meant.
    "torch": ("bilinear", "nearest", "bicubic"),
    # A browser canvas's drawImage, as Chromium draws it on the CPU: bilinear at the default imageSmoothingQuality
    # ("low"), nearest with imageSmoothingEnabled = false. What a web application's preprocessing resizes with.
    "canvas": ("bilinear", "nearest"),
}
# A filter's counterpart in another library (used when an explanation tries the other library).
COUNTERPARTS = {
    ("pillow", "opencv"): {"bilinear": "linear", "bicubic": "cubic", "lanczos": "lanczos4", "nearest": "nearest"},
    ("pillow", "torchvision"): {"bilinear": "bilinear", "bicubic": "bicubic", "nearest": "nearest"},
    ("opencv", "torchvision"): {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"},
    ("pillow", "canvas"): {"bilinear": "bilinear", "nearest": "nearest"},
    ("opencv", "canvas"): {"linear": "bilinear", "nearest": "nearest"},
    ("torchvision", "canvas"): {"bilinear": "bilinear", "nearest": "nearest"},
}
POSITIONS = get_args(m.Position)
PAD_MODES = get_args(m.PadMode)
LAYOUTS = get_args(m.Layout)
SUBSAMPLINGS = get_args(m.Subsampling)
JPEG_LIBRARIES = get_args(m.JpegLibrary)
# Each library's quality when the application gives none: Pillow's save and OpenCV's imencode.
JPEG_DEFAULT_QUALITY = {"pillow": 75, "opencv": 95}
CAST_DTYPES = get_args(m.CastType)
MAX_REPEAT = m.MAX_REPEAT


def counterpart(filt: str, src: str, dst: str) -> str | None:
    """`filt` of library `src` named as library `dst` names it, or None when `dst` has no such filter."""
    if src == dst:
        return filt
    table = COUNTERPARTS.get((src, dst))
    if table is not None:
        return table.get(filt)
    back = COUNTERPARTS.get((dst, src), {})
    return next((k for k, v in back.items() if v == filt), None)


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, tuple):
        return "[" + ", ".join("null" if v is None else _short(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, When):
        return value.words()
    return str(value)


# The filters whose output stays within the range of their input (no overshoot around an edge).
_CLAMPED_FILTERS = ("nearest", "nearest_exact", "bilinear", "linear", "area", "box")


@dataclass(frozen=True)
class ValueRange:
    """The bounds the tensor's values lie in after some steps (per channel once they differ), and whether the
    values are floats by then (a float resize may overshoot, an 8-bit one is clamped)."""

    low: np.ndarray
    high: np.ndarray
    is_float: bool

    def including(self, values: tuple[float, ...]) -> ValueRange:
        v = np.asarray(values, np.float64)
        return ValueRange(np.minimum(self.low, v), np.maximum(self.high, v), self.is_float)


class Step:
    """Common to every step: its manifest name and its parameters in the manifest's words; each step class
    also makes itself from its typed block (`from_model`), and says what it does to one grey level (`units`)
    and to the value range."""

    MODEL: ClassVar[type[Block]] = Block  # the step's block in the manifest model
    name = ""  # its manifest name: the block's TAG
    scalar = ""  # for steps written as `name: value`, the field that holds the value: the block's SCALAR

    @classmethod
    def from_model(cls, block: Any, where: str) -> Step:
        raise NotImplementedError

    def units(self, unit: float) -> float:
        """The size of one grey level after this step, given its size before."""
        return unit

    def value_range(self, r: ValueRange) -> ValueRange | None:
        """The range after this step, given the range before; None when the step can leave any bound."""
        return r

    # Every step class says what it does to the image's size and whether it treats each band alike (below): no
    # default, so that a new geometry step cannot be taken for one that keeps the size
    # (tests/preprocess/test_step_entries.py holds every class in STEPS to defining both).
    def size_after(self, h: int, w: int) -> tuple[int, int]:
        """The height and width this step makes of an h x w image (PreprocessError when it would fail)."""
        raise NotImplementedError(f"{type(self).__name__} says nothing of the size it makes")

    def per_band(self) -> bool:
        """Whether this step, run on one grey band and then repeated, makes what it makes of three equal bands:
        a geometry step that treats each band alike with one value for all (Pillow resamples each band with
        the same integer kernel)."""
        raise NotImplementedError(f"{type(self).__name__} says nothing of its bands")

    def params(self) -> dict[str, Any]:
        """The parameters as written (defaults left out unless the step has no other); a condition first, as
        it reads: `pad: {when: {sum_of_sides: {lt: 64}}, at_least: [32, 32]}`."""
        out = {}
        for fld in fields(self):  # type: ignore[arg-type]
            value = getattr(self, fld.name)
            if value is not None and value != fld.default:
                out[fld.name] = value
        if "when" in out:
            out = {"when": out.pop("when"), **out}
        return out

    def words(self) -> str:
        """The step as one line of YAML flow, e.g. `resize: {height: 64, rounding: floor}`."""
        if self.scalar:
            return f"{self.name}: {_short(getattr(self, self.scalar))}"
        return f"{self.name}: {_short(self.params())}"

    def data(self) -> dict[str, Any]:
        """The step as plain data (for YAML output)."""
        if self.scalar:
            return {self.name: _plain(getattr(self, self.scalar))}
        return {self.name: {k: _plain(v) for k, v in self.params().items()}}


def _plain(value: Any) -> Any:
    if isinstance(value, When):
        return value.mapping()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _pixel_values(values: list[float], where: str) -> tuple[float, ...]:
    if any(not 0 <= v <= 255 for v in values):
        raise PreprocessError(f"{where} is {values!r}; expected values from 0 to 255")
    return tuple(float(v) for v in values)


def _channels(value: float | list[float]) -> tuple[float, ...]:
    """A per-channel value (one number, or one per channel) as a tuple."""
    return tuple(float(v) for v in value) if isinstance(value, list) else (float(value),)


def _hw(value: int | list[int]) -> tuple[int, int]:
    """A size as [h, w]; a single integer means a square."""
    return (value[0], value[1]) if isinstance(value, list) else (value, value)


# The limits that go with a geometry, and each resize field that is one.
_LIMITS = {"shorter_side": ("max_longer",), "height": ("min_width", "max_width"), "width": ("min_height", "max_height")}
_ALL_LIMITS = ("max_longer", "min_width", "max_width", "min_height", "max_height")


def _geometry(block: m.Resize, geometry: str) -> Any:
    if geometry in ("size", "fit"):
        return _hw(getattr(block, geometry))
    if geometry == "ppocr_line":
        assert block.ppocr_line is not None
        return block.ppocr_line.height, block.ppocr_line.min_width
    return getattr(block, geometry)


def _when(value: m.When | None, where: str) -> When | None:
    return None if value is None else when_of(value)


def _offset(value: int, where: str) -> int:
    if not 0 <= value <= m.MAX_SIDE:
        raise PreprocessError(f"{where} holds {value!r}; expected integers from 0 to {m.MAX_SIDE}")
    return value


@dataclass(frozen=True)
class Decode(Step):
    mode: str = m.Decode.mode
    library: str = m.Decode.library
    exif: bool | None = None  # None: as the library does by default
    alpha: tuple[float, ...] | None = None  # composite on this colour; None drops it
    MODEL = m.Decode
    name = m.Decode.TAG

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode, **super().params()}

    @property
    def applies_exif(self) -> bool:
        return self.exif if self.exif is not None else self.library == "opencv"

    @classmethod
    def from_model(cls, block: m.Decode, where: str) -> Decode:
        alpha = block.alpha
        composite = None if isinstance(alpha, str) else _pixel_values(alpha.composite, f"{where}.alpha.composite")
        return Decode(mode=block.mode, library=block.library, exif=block.exif, alpha=composite)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Convert(Step):
    to: str = "RGB"
    formula: str = m.Convert.formula
    MODEL = m.Convert
    name = m.Convert.TAG

    def params(self) -> dict[str, Any]:
        return {"to": self.to, **super().params()}

    @classmethod
    def from_model(cls, block: m.Convert, where: str) -> Convert:
        return Convert(block.to, block.formula)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Resize(Step):
    size: tuple[int, int] | None = None
    shorter_side: int | None = None
    max_longer: int | None = None
    longer_side: int | None = None
    height: int | None = None
    min_width: int | None = None
    max_width: int | None = None
    width: int | None = None
    min_height: int | None = None
    max_height: int | None = None
    fit: tuple[int, int] | None = None
    scale: float | None = None
    ppocr_line: tuple[int, int] | None = None  # (height, min_width)
    rounding: str = m.Resize.rounding
    arithmetic: str = m.Resize.arithmetic
    multiple_of: int | None = None
    multiple_of_rounding: str | None = None  # None: the step's `rounding`
    filter: str = ""  # "" means the library's default
    library: str = m.Resize.library
    antialias: bool = True
    when: When | None = None  # run only on an image whose size satisfies it
    MODEL = m.Resize
    name = m.Resize.TAG

    @property
    def filter_name(self) -> str:
        return self.filter or FILTERS[self.library][0]

    def params(self) -> dict[str, Any]:
        out = super().params()
        if self.ppocr_line is not None:
            out["ppocr_line"] = {"height": self.ppocr_line[0], "min_width": self.ppocr_line[1]}
        return out

    @classmethod
    def from_model(cls, block: m.Resize, where: str) -> Resize:
        given = [g for g in GEOMETRIES if getattr(block, g) is not None]
        if len(given) != 1:
            raise PreprocessError(f"{where} needs exactly one geometry of {', '.join(GEOMETRIES)} (has {len(given)})")
        geometry = given[0]
        for limit in _ALL_LIMITS:
            if getattr(block, limit) is not None and limit not in _LIMITS.get(geometry, ()):
                raise PreprocessError(f"{where}.{limit} does not go with {geometry}")
        library = block.library
        if block.filter is not None and block.filter not in FILTERS[library]:
            raise PreprocessError(f"{where}.filter is {block.filter!r}; expected one of {', '.join(FILTERS[library])}")
        if library != "torchvision" and block.antialias is not None:
            raise PreprocessError(f"{where}.antialias is only chosen for torchvision (pillow always, opencv never)")
        if block.multiple_of is not None and geometry in ("size", "ppocr_line"):
            raise PreprocessError(f"{where}.multiple_of does not go with {geometry}, which gives the size itself")
        if block.multiple_of_rounding is not None and block.multiple_of is None:
            raise PreprocessError(f"{where}.multiple_of_rounding needs multiple_of")
        limits = {limit: getattr(block, limit) for limit in _LIMITS.get(geometry, ())}
        return Resize(
            **{geometry: _geometry(block, geometry)},
            **limits,
            rounding=block.rounding,
            arithmetic=block.arithmetic,
            multiple_of=block.multiple_of,
            multiple_of_rounding=block.multiple_of_rounding,
            filter=block.filter or "",
            library=library,
            antialias=True if block.antialias is None else block.antialias,
            when=_when(block.when, where),
        )

    def value_range(self, r: ValueRange) -> ValueRange | None:
        # A float resize (or torch's, which does not clamp) with an overshooting filter can leave the bounds.
        if (r.is_float or self.library == "torch") and self.filter_name not in _CLAMPED_FILTERS:
            return None
        return r

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        from checker.preprocess.image.geometry import resize_size  # geometry imports this module's classes

        return resize_size(self, h, w)

    def per_band(self) -> bool:
        return self.library == "pillow"


@dataclass(frozen=True)
class Crop(Step):
    center: tuple[int, int] | None = None
    box: tuple[int, int, int, int] | None = None
    offset_rounding: str = m.Crop.offset_rounding
    pad_if_smaller: tuple[float, ...] | None = None
    when: When | None = None
    MODEL = m.Crop
    name = m.Crop.TAG

    @classmethod
    def from_model(cls, block: m.Crop, where: str) -> Crop:
        if (block.center is None) == (block.box is None):
            raise PreprocessError(f"{where} needs exactly one of center: [h, w] or box: [top, left, h, w]")
        fill = None if block.pad_if_smaller is None else _channels(block.pad_if_smaller)
        common = Crop(offset_rounding=block.offset_rounding, pad_if_smaller=fill, when=_when(block.when, where))
        if block.center is not None:
            return replace(common, center=_hw(block.center))
        assert block.box is not None
        top, left = (_offset(v, f"{where}.box") for v in block.box[:2])
        h, w = (f.side(v, f"{where}.box") for v in block.box[2:])
        return replace(common, box=(top, left, h, w))

    def value_range(self, r: ValueRange) -> ValueRange | None:
        return r if self.pad_if_smaller is None else r.including(self.pad_if_smaller)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        if self.center:
            return self.center
        return (self.box[2], self.box[3]) if self.box is not None else (h, w)

    def per_band(self) -> bool:
        return self.pad_if_smaller is None or len(self.pad_if_smaller) == 1


@dataclass(frozen=True)
class Pad(Step):
    to: tuple[int, int] | None = None
    at_least: tuple[int | None, int | None] | None = None
    multiple_of: int | None = None
    position: str = m.Pad.position
    odd: str = m.Pad.odd
    mode: str = m.Pad.mode
    value: tuple[float, ...] = (0.0,)
    when: When | None = None
    MODEL = m.Pad
    name = m.Pad.TAG

    def params(self) -> dict[str, Any]:
        out = super().params()
        if "value" not in out and self.mode == "constant":
            out["value"] = 0
        elif len(self.value) == 1 and "value" in out:
            out["value"] = self.value[0]
        return out

    @classmethod
    def from_model(cls, block: m.Pad, where: str) -> Pad:
        given = [k for k in ("to", "at_least", "multiple_of") if getattr(block, k) is not None]
        if len(given) != 1:
            raise PreprocessError(f"{where} needs exactly one of to, at_least, multiple_of")
        common = Pad(
            position=block.position,
            odd=block.odd,
            mode=block.mode,
            value=_channels(block.value),
            when=_when(block.when, where),
        )
        if block.to is not None:
            return replace(common, to=_hw(block.to))
        if block.multiple_of is not None:
            return replace(common, multiple_of=block.multiple_of)
        assert block.at_least is not None
        return replace(common, at_least=(block.at_least[0], block.at_least[1]))

    def value_range(self, r: ValueRange) -> ValueRange | None:
        return r.including(self.value) if self.mode == "constant" else r

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        from checker.preprocess.image.geometry import pad_amounts  # geometry imports this module's classes

        return pad_amounts(self, h, w)

    def per_band(self) -> bool:
        return len(self.value) == 1


@dataclass(frozen=True)
class Jpeg(Step):
    quality: int | None = None  # None: the library's default
    subsampling: str = m.Jpeg.subsampling
    library: str = m.Jpeg.library
    MODEL = m.Jpeg
    name = m.Jpeg.TAG

    @property
    def quality_used(self) -> int:
        return self.quality if self.quality is not None else JPEG_DEFAULT_QUALITY[self.library]

    @classmethod
    def from_model(cls, block: m.Jpeg, where: str) -> Jpeg:
        # The schema's "integer" admits 80.0, which no encoder's quality is: refused, as written
        if block.quality is not None and not isinstance(block.quality, int):
            raise PreprocessError(f"{where}.quality is {block.quality!r}; expected an integer from 1 to 100")
        return Jpeg(block.quality, block.subsampling, block.library)

    def value_range(self, r: ValueRange) -> ValueRange | None:
        # 8-bit pixels come back anywhere in 0-255: the round trip rings around an edge
        return None if r.is_float else ValueRange(np.zeros(1), np.full(1, 255.0), False)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        # three equal bands are encoded as colour (luma and flat chroma), one band as greyscale: not the same
        return False


@dataclass(frozen=True)
class Scale(Step):
    factor: float = m.Scale.factor
    MODEL = m.Scale
    name = m.Scale.TAG
    scalar = m.Scale.SCALAR

    @classmethod
    def from_model(cls, block: m.Scale, where: str) -> Scale:
        factor = block.factor
        if factor == 0 or not math.isfinite(factor * 65535):
            raise PreprocessError(f"{where} is {factor!r}; expected a non-zero finite factor")
        return Scale(factor)

    def units(self, unit: float) -> float:
        return unit * abs(self.factor)

    def value_range(self, r: ValueRange) -> ValueRange | None:
        a, b = r.low * self.factor, r.high * self.factor
        return ValueRange(np.minimum(a, b), np.maximum(a, b), True)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Normalize(Step):
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    MODEL = m.Normalize
    name = m.Normalize.TAG

    def params(self) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std}

    @classmethod
    def from_model(cls, block: m.Normalize, where: str) -> Normalize:
        mean, std = _channels(block.mean), _channels(block.std)
        if any(s == 0 for s in std):
            raise PreprocessError(f"{where}.std holds a zero")
        if not all(math.isfinite(65535 / s) for s in std):
            raise PreprocessError(f"{where}.std is so small that a pixel becomes infinite")
        return Normalize(mean, std)

    def units(self, unit: float) -> float:
        return unit / min(abs(s) for s in self.std)

    def value_range(self, r: ValueRange) -> ValueRange | None:
        mean, std = np.asarray(self.mean, np.float64), np.asarray(self.std, np.float64)
        a, b = (r.low - mean) / std, (r.high - mean) / std
        return ValueRange(np.minimum(a, b), np.maximum(a, b), True)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Cast(Step):
    dtype: str = m.Cast.dtype
    MODEL = m.Cast
    name = m.Cast.TAG
    scalar = m.Cast.SCALAR

    @classmethod
    def from_model(cls, block: m.Cast, where: str) -> Cast:
        return Cast(block.dtype)

    def value_range(self, r: ValueRange) -> ValueRange | None:
        return replace(r, is_float=True) if self.dtype in ("float32", "float16", "float64") else r

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Batch(Step):
    repeat: int = 1
    MODEL = m.Batch
    name = m.Batch.TAG

    @classmethod
    def from_model(cls, block: m.Batch, where: str) -> Batch:
        return Batch(block.repeat)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Layout(Step):
    layout: str = m.LayoutStep.layout
    MODEL = m.LayoutStep
    name = m.LayoutStep.TAG
    scalar = m.LayoutStep.SCALAR

    @classmethod
    def from_model(cls, block: m.LayoutStep, where: str) -> Layout:
        return Layout(block.layout)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


# Every image step, in the order docs/preprocessing.md lists them: its kernel (pipeline.py) and its one-edit
# changes (neighbours.py) are registered to it, and tests/preprocess/test_step_entries.py holds each to its
# schema definition and its heading.
STEPS: tuple[type[Step], ...] = (Decode, Convert, Resize, Crop, Pad, Jpeg, Scale, Normalize, Cast, Batch, Layout)
STEP_NAMES = tuple(step.name for step in STEPS)
REGISTRY: Registry[Step] = Registry("image", STEPS)


_BY_MODEL: dict[type[Block], type[Step]] = {step.MODEL: step for step in STEPS}


def parse_steps(value: Any, where: str = "preprocessing.steps") -> tuple[Step, ...]:
    """The validated step list of `preprocessing.steps` given as plain data (an imported pipeline's, a test's):
    judged by the steps' schema first, as a manifest's are."""
    return steps_of(checked(m.Steps, value, where), where)


def steps_of(blocks: list[Any], where: str = "preprocessing.steps") -> tuple[Step, ...]:
    """The runtime steps of typed step blocks (a list the schema admitted), beginning with their decode."""
    out = [_BY_MODEL[type(block)].from_model(block, f"{where}[{i}].{block.TAG}") for i, block in enumerate(blocks)]
    for i, step in enumerate(out):
        if isinstance(step, Decode) and i != 0:
            raise PreprocessError(f"{where}[{i}]: decode must be the first step")
    if not isinstance(out[0], Decode):
        out.insert(0, Decode())
    return tuple(out)


def tensor_units(steps: tuple[Step, ...]) -> float:
    """How large one grey level is in the tensor: the scale factors and standard deviations it went through."""
    unit = 1.0
    for step in steps:
        unit = step.units(unit)
    return unit


def implied_range(steps: tuple[Step, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """The bounds every value of the tensor lies in (per channel once a normalize made them differ), followed
    through the value steps from 0-255; None when a step can leave them (a float resize that overshoots)."""
    found: ValueRange | None = ValueRange(np.zeros(1), np.full(1, 255.0), False)
    for step in steps:
        if found is None:
            return None
        found = step.value_range(found)
    return None if found is None else (found.low + 0.0, found.high + 0.0)
