"""The ordered image steps a manifest declares (`preprocessing.steps`), parsed and validated.

Each step is a frozen dataclass that can say itself back in the manifest's words (`words`), so that
`checker preprocess --show-steps` and the fidelity explanations quote the manifest rather than paraphrase it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from checker.preprocess import fields as f
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.condition import When, parse_when
from checker.preprocess.registry import Registry

MODES = ("RGB", "BGR", "L")
ROUNDINGS = ("floor", "ceil", "half_up", "half_even")
ARITHMETICS = ("exact", "float_scale_first", "float_product_first")
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
POSITIONS = (
    "center",
    "top_left",
    "top_right",
    "bottom_left",
    "bottom_right",
    "top",
    "bottom",
    "left",
    "right",
)
PAD_MODES = ("constant", "edge", "reflect", "symmetric")
LAYOUTS = ("NCHW", "NHWC", "CHW", "HWC", "NHW", "HW")
SUBSAMPLINGS = ("4:4:4", "4:2:2", "4:2:0")
JPEG_LIBRARIES = ("pillow", "opencv")
# Each library's quality when the application gives none: Pillow's save and OpenCV's imencode.
JPEG_DEFAULT_QUALITY = {"pillow": 75, "opencv": 95}
CAST_DTYPES = ("float32", "float16", "float64", "uint8", "int8", "int16", "int32", "int64")
MAX_REPEAT = 64


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
    also parses itself (`parse`), and says what it does to one grey level (`units`) and to the value range."""

    name = ""
    scalar = ""  # for steps written as `name: value`, the field that holds the value

    @classmethod
    def parse(cls, value: Any, where: str) -> Step:
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


def _known(d: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(str(k) for k in d if k not in allowed)
    if unknown:
        raise PreprocessError(f"{where} has unknown parameter(s) {', '.join(unknown)}; expected {', '.join(allowed)}")


def _pixel_values(value: Any, where: str) -> tuple[float, ...]:
    values = f.numbers(value, where)
    if any(not 0 <= v <= 255 for v in values):
        raise PreprocessError(f"{where} is {value!r}; expected values from 0 to 255")
    return values


_RESIZE_KEYS = (
    *GEOMETRIES,
    "max_longer",
    "min_width",
    "max_width",
    "min_height",
    "max_height",
    "rounding",
    "arithmetic",
    "multiple_of",
    "multiple_of_rounding",
    "filter",
    "library",
    "antialias",
    "when",
)
_LIMITS = {"shorter_side": ("max_longer",), "height": ("min_width", "max_width"), "width": ("min_height", "max_height")}


def _geometry(geometry: str, value: Any, where: str) -> Any:
    if geometry in ("size", "fit"):
        return f.size_hw(value, where)
    if geometry == "scale":
        factor = f.number(value, where)
        if not 0 < factor <= 64:
            raise PreprocessError(f"{where} is {value!r}; expected a factor above 0 and at most 64")
        return factor
    if geometry == "ppocr_line":
        d = f.mapping(value, where)
        _known(d, ("height", "min_width"), where)
        return f.side(d.get("height"), f"{where}.height"), f.side(d.get("min_width"), f"{where}.min_width")
    return f.side(value, where)


def _when(d: dict[str, Any], where: str) -> When | None:
    return None if d.get("when") is None else parse_when(d["when"], f"{where}.when")


def _offset(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= f.MAX_SIDE:
        raise PreprocessError(f"{where} holds {value!r}; expected integers from 0 to {f.MAX_SIDE}")
    return value


@dataclass(frozen=True)
class Decode(Step):
    mode: str = "RGB"
    library: str = "pillow"
    exif: bool | None = None  # None: as the library does by default
    alpha: tuple[float, ...] | None = None  # composite on this colour; None drops it
    name = "decode"

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode, **super().params()}

    @property
    def applies_exif(self) -> bool:
        return self.exif if self.exif is not None else self.library == "opencv"

    @classmethod
    def parse(cls, value: Any, where: str) -> Decode:
        d = f.mapping(value, where)
        _known(d, ("mode", "library", "exif", "alpha"), where)
        exif = d.get("exif")
        if exif is not None and not isinstance(exif, bool):
            raise PreprocessError(f"{where}.exif is {exif!r}; expected true or false")
        alpha = d.get("alpha", "drop")
        composite: tuple[float, ...] | None = None
        if alpha != "drop":
            a = f.mapping(alpha, f"{where}.alpha")
            if set(a) != {"composite"}:
                raise PreprocessError(f"{where}.alpha is {alpha!r}; expected drop or {{composite: [r, g, b]}}")
            composite = _pixel_values(a["composite"], f"{where}.alpha.composite")
        return Decode(
            mode=f.choice(d, "mode", MODES, "RGB", where),
            library=f.choice(d, "library", ("pillow", "opencv"), "pillow", where),
            exif=exif,
            alpha=composite,
        )

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Convert(Step):
    to: str = "RGB"
    formula: str = "pillow"
    name = "convert"

    def params(self) -> dict[str, Any]:
        return {"to": self.to, **super().params()}

    @classmethod
    def parse(cls, value: Any, where: str) -> Convert:
        d = f.mapping(value, where)
        _known(d, ("to", "formula"), where)
        if "to" not in d:
            raise PreprocessError(f"{where} needs `to` (RGB, BGR or L)")
        return Convert(
            f.choice(d, "to", MODES, "RGB", where), f.choice(d, "formula", ("pillow", "opencv"), "pillow", where)
        )

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
    rounding: str = "half_up"
    arithmetic: str = "exact"
    multiple_of: int | None = None
    multiple_of_rounding: str | None = None  # None: the step's `rounding`
    filter: str = ""  # "" means the library's default
    library: str = "pillow"
    antialias: bool = True
    when: When | None = None  # run only on an image whose size satisfies it
    name = "resize"

    @property
    def filter_name(self) -> str:
        return self.filter or FILTERS[self.library][0]

    def params(self) -> dict[str, Any]:
        out = super().params()
        if self.ppocr_line is not None:
            out["ppocr_line"] = {"height": self.ppocr_line[0], "min_width": self.ppocr_line[1]}
        return out

    @classmethod
    def parse(cls, value: Any, where: str) -> Resize:
        d = f.mapping(value, where)
        _known(d, _RESIZE_KEYS, where)
        given = [g for g in GEOMETRIES if g in d]
        if len(given) != 1:
            raise PreprocessError(f"{where} needs exactly one geometry of {', '.join(GEOMETRIES)} (has {len(given)})")
        geometry = given[0]
        for limit in ("max_longer", "min_width", "max_width", "min_height", "max_height"):
            if limit in d and limit not in _LIMITS.get(geometry, ()):
                raise PreprocessError(f"{where}.{limit} does not go with {geometry}")
        library = f.choice(d, "library", tuple(FILTERS), "pillow", where)
        filt = f.choice(d, "filter", FILTERS[library], FILTERS[library][0], where)
        antialias = d.get("antialias", True)
        if not isinstance(antialias, bool):
            raise PreprocessError(f"{where}.antialias is {antialias!r}; expected true or false")
        if library != "torchvision" and "antialias" in d:
            raise PreprocessError(f"{where}.antialias is only chosen for torchvision (pillow always, opencv never)")
        kwargs: dict[str, Any] = {geometry: _geometry(geometry, d[geometry], f"{where}.{geometry}")}
        for limit in _LIMITS.get(geometry, ()):
            if d.get(limit) is not None:
                kwargs[limit] = f.side(d[limit], f"{where}.{limit}")
        multiple = d.get("multiple_of")
        if multiple is not None and geometry in ("size", "ppocr_line"):
            raise PreprocessError(f"{where}.multiple_of does not go with {geometry}, which gives the size itself")
        if "multiple_of_rounding" in d and multiple is None:
            raise PreprocessError(f"{where}.multiple_of_rounding needs multiple_of")
        return Resize(
            **kwargs,
            rounding=f.choice(d, "rounding", ROUNDINGS, "half_up", where),
            arithmetic=f.choice(d, "arithmetic", ARITHMETICS, "exact", where),
            multiple_of=None if multiple is None else f.side(multiple, f"{where}.multiple_of"),
            multiple_of_rounding=None
            if d.get("multiple_of_rounding") is None
            else f.choice(d, "multiple_of_rounding", ROUNDINGS, "half_up", where),
            filter="" if "filter" not in d else filt,
            library=library,
            antialias=antialias,
            when=_when(d, where),
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
    offset_rounding: str = "floor"
    pad_if_smaller: tuple[float, ...] | None = None
    when: When | None = None
    name = "crop"

    @classmethod
    def parse(cls, value: Any, where: str) -> Crop:
        d = f.mapping(value, where)
        _known(d, ("center", "box", "offset_rounding", "pad_if_smaller", "when"), where)
        if ("center" in d) == ("box" in d):
            raise PreprocessError(f"{where} needs exactly one of center: [h, w] or box: [top, left, h, w]")
        fill = d.get("pad_if_smaller")
        rounding = f.choice(d, "offset_rounding", ("floor", "half_even"), "floor", where)
        pad_fill = None if fill is None else f.numbers(fill, f"{where}.pad_if_smaller")
        if "center" in d:
            return Crop(
                center=f.size_hw(d["center"], f"{where}.center"),
                offset_rounding=rounding,
                pad_if_smaller=pad_fill,
                when=_when(d, where),
            )
        box = d["box"]
        if not isinstance(box, list) or len(box) != 4:
            raise PreprocessError(f"{where}.box is {box!r}; expected [top, left, height, width]")
        top, left = (_offset(v, f"{where}.box") for v in box[:2])
        h, w = (f.side(v, f"{where}.box") for v in box[2:])
        return Crop(box=(top, left, h, w), offset_rounding=rounding, pad_if_smaller=pad_fill, when=_when(d, where))

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
    position: str = "center"
    odd: str = "end"
    mode: str = "constant"
    value: tuple[float, ...] = (0.0,)
    when: When | None = None
    name = "pad"

    def params(self) -> dict[str, Any]:
        out = super().params()
        if "value" not in out and self.mode == "constant":
            out["value"] = 0
        elif len(self.value) == 1 and "value" in out:
            out["value"] = self.value[0]
        return out

    @classmethod
    def parse(cls, value: Any, where: str) -> Pad:
        d = f.mapping(value, where)
        _known(d, ("to", "at_least", "multiple_of", "position", "odd", "mode", "value", "when"), where)
        given = [k for k in ("to", "at_least", "multiple_of") if k in d]
        if len(given) != 1:
            raise PreprocessError(f"{where} needs exactly one of to, at_least, multiple_of")
        common = Pad(
            position=f.choice(d, "position", POSITIONS, "center", where),
            odd=f.choice(d, "odd", ("end", "start"), "end", where),
            mode=f.choice(d, "mode", PAD_MODES, "constant", where),
            value=f.numbers(d.get("value", 0), f"{where}.value"),
            when=_when(d, where),
        )
        if "to" in d:
            return replace(common, to=f.size_hw(d["to"], f"{where}.to"))
        if "multiple_of" in d:
            return replace(common, multiple_of=f.side(d["multiple_of"], f"{where}.multiple_of"))
        sides = d["at_least"]
        if not isinstance(sides, list) or len(sides) != 2:
            raise PreprocessError(f"{where}.at_least is {sides!r}; expected [height or null, width or null]")
        h, w = (None if v is None else f.side(v, f"{where}.at_least") for v in sides)
        return replace(common, at_least=(h, w))

    def value_range(self, r: ValueRange) -> ValueRange | None:
        return r.including(self.value) if self.mode == "constant" else r

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        from checker.preprocess.image.geometry import pad_amounts  # geometry imports this module's classes

        return pad_amounts(self, h, w)

    def per_band(self) -> bool:
        return len(self.value) == 1


def _quality(value: Any, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100):
        raise PreprocessError(f"{where} is {value!r}; expected an integer from 1 to 100")
    return value


@dataclass(frozen=True)
class Jpeg(Step):
    quality: int | None = None  # None: the library's default
    subsampling: str = "4:2:0"
    library: str = "pillow"
    name = "jpeg"

    @property
    def quality_used(self) -> int:
        return self.quality if self.quality is not None else JPEG_DEFAULT_QUALITY[self.library]

    @classmethod
    def parse(cls, value: Any, where: str) -> Jpeg:
        d = f.mapping(value, where)
        _known(d, ("quality", "subsampling", "library"), where)
        return Jpeg(
            _quality(d.get("quality"), f"{where}.quality"),
            f.choice(d, "subsampling", SUBSAMPLINGS, "4:2:0", where),
            f.choice(d, "library", JPEG_LIBRARIES, "pillow", where),
        )

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
    factor: float = 1.0
    name = "scale"
    scalar = "factor"

    @classmethod
    def parse(cls, value: Any, where: str) -> Scale:
        factor = f.number(value, where)
        if factor == 0 or not math.isfinite(factor * 65535):
            raise PreprocessError(f"{where} is {value!r}; expected a non-zero finite factor")
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
    name = "normalize"

    def params(self) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std}

    @classmethod
    def parse(cls, value: Any, where: str) -> Normalize:
        d = f.mapping(value, where)
        _known(d, ("mean", "std"), where)
        mean = f.numbers(d.get("mean", 0.0), f"{where}.mean")
        std = f.numbers(d.get("std", 1.0), f"{where}.std")
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
    dtype: str = "float32"
    name = "cast"
    scalar = "dtype"

    @classmethod
    def parse(cls, value: Any, where: str) -> Cast:
        if value not in CAST_DTYPES:
            raise PreprocessError(f"{where} is {value!r}; expected one of {', '.join(CAST_DTYPES)}")
        return Cast(str(value))

    def value_range(self, r: ValueRange) -> ValueRange | None:
        return replace(r, is_float=True) if self.dtype in ("float32", "float16", "float64") else r

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Batch(Step):
    repeat: int = 1
    name = "batch"

    @classmethod
    def parse(cls, value: Any, where: str) -> Batch:
        d = f.mapping(value, where)
        _known(d, ("repeat",), where)
        n = d.get("repeat")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_REPEAT:
            raise PreprocessError(f"{where}.repeat is {n!r}; expected an integer from 1 to {MAX_REPEAT}")
        return Batch(n)

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


@dataclass(frozen=True)
class Layout(Step):
    layout: str = "NCHW"
    name = "layout"
    scalar = "layout"

    @classmethod
    def parse(cls, value: Any, where: str) -> Layout:
        if value not in LAYOUTS:
            raise PreprocessError(f"{where} is {value!r}; expected one of {', '.join(LAYOUTS)}")
        return Layout(str(value))

    def size_after(self, h: int, w: int) -> tuple[int, int]:
        return h, w  # no geometry

    def per_band(self) -> bool:
        return False


# Every image step, in the order docs/preprocessing.md lists them: its kernel (pipeline.py) and its one-edit
# changes (neighbours.py) are registered to it, and tests/preprocess/test_step_entries.py holds each to its
# schema definition and its heading.
STEPS: tuple[type[Step], ...] = (Decode, Convert, Resize, Crop, Pad, Jpeg, Scale, Normalize, Cast, Batch, Layout)
STEP_NAMES = tuple(step.name for step in STEPS)
_BY_NAME = {step.name: step for step in STEPS}
REGISTRY: Registry[Step] = Registry("image", STEPS)


def parse_steps(value: Any, where: str = "preprocessing.steps") -> tuple[Step, ...]:
    """The validated step list of `preprocessing.steps`."""
    if not isinstance(value, list) or not value:
        raise PreprocessError(f"{where} is {value!r}; expected a non-empty list of steps")
    if len(value) > 64:
        raise PreprocessError(f"{where} has {len(value)} steps; at most 64 are allowed")
    out = [parse_step(item, f"{where}[{i}]") for i, item in enumerate(value)]
    for i, step in enumerate(out):
        if isinstance(step, Decode) and i != 0:
            raise PreprocessError(f"{where}[{i}]: decode must be the first step")
    if not isinstance(out[0], Decode):
        out.insert(0, Decode())
    return tuple(out)


def parse_step(item: Any, where: str) -> Step:
    if not isinstance(item, dict) or len(item) != 1:
        raise PreprocessError(f"{where} is {item!r}; expected a mapping with one key, the step's name")
    ((name, params),) = item.items()
    parser = _BY_NAME.get(name) if isinstance(name, str) else None
    if parser is None:
        raise PreprocessError(f"{where}: unknown step {name!r}; the steps are {', '.join(STEP_NAMES)}")
    step: Step = parser.parse(params, f"{where}.{name}")
    return step


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
