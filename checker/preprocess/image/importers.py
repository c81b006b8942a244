"""Other tools' pipeline files read into steps: an Albumentations `Compose` saved with `A.save` (JSON or
YAML), and an OpenVINO Accuracy Checker `preprocessing:` list.

A manifest names one with `preprocessing: {kind: image, import: {format: albumentations, path: aug.json}}`;
`checker preprocess --import FORMAT FILE` prints the steps it becomes, to paste into a manifest. Whatever a
file says that the steps cannot reproduce exactly (a random transform, a probability below 1, an unknown
transform or option) is refused by its name, never skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, get_args

from checker.bundle.paths import regular_size
from checker.manifest.model import image as m
from checker.preprocess import fields as f
from checker.preprocess.checked import checked
from checker.preprocess.errors import CannotReproduce, PreprocessError
from checker.preprocess.image.hf_config import map_config
from checker.preprocess.image.origins import Origin, spelled, written
from checker.preprocess.image.shorthand import expand
from checker.preprocess.image.spec import parse_image
from checker.preprocess.image.steps import (
    Convert,
    Crop,
    Decode,
    Normalize,
    Pad,
    Resize,
    Scale,
    Step,
    steps_of,
)

MAX_FILE_BYTES = 1 << 20
MAX_STEPS = m.MAX_STEPS  # as many as a manifest's own list may have
FORMATS = get_args(m.ImportFormat)
# OpenCV's interpolation flags as both tools save them, named as the opencv library's filters.
_CV2_FLAGS = {0: "nearest", 1: "linear", 2: "cubic", 3: "area", 4: "lanczos4", 6: "nearest_exact"}
# OpenCV's border modes, as numpy's pad modes.
_BORDERS = {0: "constant", 1: "edge", 2: "symmetric", 4: "reflect"}


# Each step a file's entry makes, with the entry's origin (None for a step the format only implies).
Traced = list[tuple[Step, Origin | None]]


class Refused(CannotReproduce):
    """The file says something the steps cannot say exactly."""


@dataclass(frozen=True)
class Imported:
    """A pipeline file's steps, and beside each the entry of the file it came from (None for a step the format
    implies, such as how the image is read): the words an explanation of a mismatch uses."""

    steps: tuple[Step, ...]
    origins: tuple[Origin | None, ...]


def read_pipeline(fmt: str, path: Path, name: str) -> tuple[Step, ...]:
    """The steps of the pipeline file at `path` in format `fmt` (albumentations, openvino or huggingface)."""
    return read_traced(fmt, path, name).steps


def read_traced(fmt: str, path: Path, name: str) -> Imported:
    """The pipeline file's steps, each with its origin in the file."""
    readers = {"albumentations": albumentations, "openvino": openvino, "huggingface": huggingface}
    if fmt not in readers:
        raise PreprocessError(f"import format {fmt!r} is not one of {', '.join(FORMATS)}")
    traced = readers[fmt](_load(path, name), name)
    if len(traced) > MAX_STEPS:
        raise PreprocessError(f"{name} makes {len(traced)} steps; at most {MAX_STEPS} are allowed")
    steps = tuple(s for s, _ in traced)
    as_manifest(steps, name)
    return Imported(steps, tuple(o for _, o in traced))


def as_manifest(steps: tuple[Step, ...], name: str) -> None:
    """Hold the steps a file became to what the same steps written in a manifest must meet: its schema, then
    what parsing checks (what `checker preprocess --import` prints can be pasted into one)."""
    where = f"the steps of {name}"
    steps_of(checked(m.Steps, [step.data() for step in steps], where), where)


def _load(path: Path, name: str) -> Any:
    try:
        size = regular_size(path)
        if size > MAX_FILE_BYTES:
            raise PreprocessError(f"{name} is {size} bytes, more than the {MAX_FILE_BYTES} a pipeline file may be")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PreprocessError(f"{name} cannot be read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise PreprocessError(f"{name} is not UTF-8 text") from e
    try:
        return json.loads(text)
    except ValueError:
        pass
    # ruamel.yaml only for a pipeline file that is not JSON: a run that imports none never loads it
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe", pure=True).load(text)
    except (YAMLError, ValueError) as e:
        raise PreprocessError(f"{name} is neither JSON nor YAML: {e}") from e


# Hugging Face


def huggingface(data: Any, name: str) -> Traced:
    """A preprocessor_config.json: its fixed order, read into the shorthand fields, as steps."""
    if not isinstance(data, dict):
        raise PreprocessError(f"{name} is not a JSON object")
    mapped = map_config(data, name)
    if mapped.refusals:
        raise Refused("; ".join(mapped.refusals.values()))
    return [(step, hf_origin(step, name)) for step in expand(parse_image(mapped.fields))]


# Pillow's filters as a preprocessor_config.json's `resample` numbers them.
_PIL_NUMBERS = {"nearest": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3, "box": 4, "hamming": 5}


def hf_origin(step: Step, name: str) -> Origin | None:
    """A config's flat keys: each step is one of its `do_*` switches and the values beside it."""
    if isinstance(step, Resize):
        return Origin("", name, {"filter": ("resample", spelled(_PIL_NUMBERS))}, {"drop": "when `do_resize` is false"})
    if isinstance(step, Crop):
        return Origin("", name, phrases={"drop": "when `do_center_crop` is false"})
    if isinstance(step, Scale):
        options: dict[str, tuple[str, Any]] = {"factor": ("rescale_factor", written)}
        return Origin("", name, options, {"drop": "when `do_rescale` is false"})
    if isinstance(step, Normalize):
        options = {"mean": ("image_mean", written), "std": ("image_std", written)}
        return Origin("", name, options, {"drop": "when `do_normalize` is false"})
    if isinstance(step, Pad):
        return Origin("", name, phrases={"drop": "when `do_pad` is false"})
    return None


# Albumentations


def albumentations(data: Any, name: str) -> Traced:
    """A `Compose` as `A.save` writes it (1.x or 2.x); the image is an RGB array (as Albumentations expects)."""
    compose = data.get("transform") if isinstance(data, dict) else None
    if not isinstance(compose, dict) or _class(compose) != "Compose":
        raise PreprocessError(f"{name} is not an Albumentations Compose saved with A.save (no transform: Compose)")
    transforms = compose.get("transforms")
    if not isinstance(transforms, list):
        raise PreprocessError(f"{name}: the Compose has no list of transforms")
    if _probability(compose, f"{name}: the Compose") < 1.0:
        raise Refused(f"{name}: the Compose applies with probability {compose.get('p')}; only p: 1 is reproducible")
    given = {"mode=BGR": f"when the image given to the Compose in {name} is BGR (as cv2.imread reads it), not RGB"}
    out: Traced = [(Decode(mode="RGB"), Origin("the image given to the Compose", name, phrases=given))]
    for i, t in enumerate(transforms):
        where = f"{name}: transform {i}"
        if not isinstance(t, dict):
            raise PreprocessError(f"{where} is not a mapping")
        cls = _class(t)
        if _probability(t, where) < 1.0:
            raise Refused(f"{where} ({cls}) applies with probability {t.get('p')}; only p: 1 is reproducible")
        maker = _ALBUMENTATIONS.get(cls)
        if maker is None:
            raise Refused(f"{where}: Albumentations' {cls} has no step that reproduces it")
        entry = f"`{cls}` (transform {i})"
        out.extend((step, _a_origin(step, entry, name, cls)) for step in maker(t, f"{where} ({cls})"))
    return out


def _a_origin(step: Step, entry: str, name: str, cls: str) -> Origin:
    """How the transform's options name the step's parameters, as A.save writes them."""
    options: dict[str, tuple[str, Any]] = {}
    phrases: dict[str, str] = {}
    here = f"{entry} in {name}"
    if isinstance(step, Resize):
        options["filter"] = ("interpolation", spelled({v: k for k, v in _CV2_FLAGS.items()}))
    elif isinstance(step, Pad):
        options["position"] = ("pad_position" if cls == "CenterCrop" else "position", written)
        options["mode"] = ("border_mode", spelled({v: k for k, v in _BORDERS.items()}))
        options["value"] = ("fill", _one_or_all)
    elif isinstance(step, Scale):
        top = "max_pixel_value" if cls == "Normalize" else "max_value"
        options["factor"] = (top, lambda factor: written(1 / float(factor)))  # type: ignore[arg-type]
        phrases["drop"] = f"when {here} has `{top}: 1`"
    elif isinstance(step, Normalize):
        options = {"mean": ("mean", written), "std": ("std", written)}
        phrases["drop"] = f"when {here} has `mean: 0`, `std: 1` (only its division by max_pixel_value)"
    return Origin(entry, name, options, phrases)


def _one_or_all(value: object) -> str:
    return written(value[0] if isinstance(value, tuple) and len(value) == 1 else value)


def _class(t: dict[str, Any]) -> str:
    return str(t.get("__class_fullname__", "")).rsplit(".", 1)[-1]


def _probability(t: dict[str, Any], where: str) -> float:
    return f.number(t.get("p", 1.0), f"{where}.p")


def _cv2_filter(t: dict[str, Any], where: str) -> str:
    flag = t.get("interpolation", 1)
    if flag not in _CV2_FLAGS:
        raise Refused(f"{where}: interpolation {flag!r} is not an OpenCV flag the steps know")
    return _CV2_FLAGS[flag]


# Options A.save writes that never change the image: they act on masks, boxes or keypoints only, or are the
# base class's bookkeeping (`strict` validates arguments; `always_apply` is 1.x's p: 1).
_INERT = frozenset(
    {
        "__class_fullname__",
        "p",
        "always_apply",
        "strict",
        "mask_interpolation",
        "fill_mask",
        "mask_value",
        "transpose_mask",
    }
)
# 2.x options that change the image unless they hold the value that turns them off.
_OFF: dict[str, object] = {
    "area_for_downscale": None,  # "image": INTER_AREA when shrinking, in place of `interpolation`
    "max_size_hw": None,  # fit inside (height, width) in place of max_size
    "pad_if_needed": False,
    "pad_height_divisor": None,
    "pad_width_divisor": None,
}


def _only(t: dict[str, Any], reads: set[str], where: str, off: dict[str, object] | None = None) -> None:
    """Refuse by name every option that is not read into a step, inert (_INERT), or off (at its value in
    `off`, then _OFF): a file from a newer Albumentations with an option unknown here is refused, not guessed."""
    offs = {**_OFF, **(off or {})}
    extra = sorted(
        k for k, v in t.items() if k not in reads and k not in _INERT and not (k in offs and _is(v, offs[k]))
    )
    if extra:
        shown = ", ".join(f"{k}: {json.dumps(t[k])}" for k in extra)
        raise Refused(f"{where}: option(s) {shown} cannot be reproduced")


def _is(value: object, off: object) -> bool:
    """`value` is the off value: the same None or bool, or an equal number that is not a bool (0 is not false)."""
    return value is off if off is None or isinstance(off, bool) else value == off and not isinstance(value, bool)


def _a_resize(t: dict[str, Any], where: str) -> list[Step]:
    _only(t, {"height", "width", "interpolation"}, where)
    size = (f.side(t.get("height"), f"{where}.height"), f.side(t.get("width"), f"{where}.width"))
    return [Resize(size=size, library="opencv", filter=_cv2_filter(t, where))]


def _a_max_size(longer: bool) -> Callable[[dict[str, Any], str], list[Step]]:
    def make(t: dict[str, Any], where: str) -> list[Step]:
        _only(t, {"max_size", "interpolation"}, where)
        n = f.side(t.get("max_size"), f"{where}.max_size")
        # Albumentations: round(side * (max_size / longest)), Python's round
        base = Resize(rounding="half_even", arithmetic="float_scale_first", library="opencv")
        base = replace(base, filter=_cv2_filter(t, where))
        return [replace(base, longer_side=n) if longer else replace(base, shorter_side=n)]

    return make


# A crop's padding options act only with pad_if_needed (2.x); 1.x wrote value and mask_value for CenterCrop.
_CROP_PADDING = {"border_mode", "fill", "value", "pad_position"}


def _a_center_crop(t: dict[str, Any], where: str) -> list[Step]:
    padding = bool(t.get("pad_if_needed"))
    _only(t, {"height", "width", "pad_if_needed", *_CROP_PADDING}, where)
    size = (f.side(t.get("height"), f"{where}.height"), f.side(t.get("width"), f"{where}.width"))
    crop = Crop(center=size)
    if not padding:
        return [crop]
    # Albumentations pads the image to at least the crop's size (as PadIfNeeded would), then crops its centre.
    return [_padding(t, where, size, "pad_position"), crop]


def _a_crop(t: dict[str, Any], where: str) -> list[Step]:
    _only(t, {"x_min", "y_min", "x_max", "y_max", *_CROP_PADDING}, where)
    if t.get("pad_if_needed"):
        raise Refused(f"{where}: pad_if_needed: true cannot be reproduced")
    x0, y0, x1, y1 = (int(t.get(k, 0)) for k in ("x_min", "y_min", "x_max", "y_max"))
    if x1 <= x0 or y1 <= y0 or min(x0, y0) < 0:
        raise PreprocessError(f"{where}: the box {x0, y0, x1, y1} is empty")
    return [Crop(box=(y0, x0, y1 - y0, x1 - x0))]


def _a_pad(t: dict[str, Any], where: str) -> list[Step]:
    reads = {"min_height", "min_width", "position", "border_mode", "value", "fill"}
    _only(t, reads, where, off={"padding": 0})  # 2.x's PadIfNeeded holds its base Pad's unused padding: 0
    sides = tuple(None if t.get(k) is None else f.side(t.get(k), f"{where}.{k}") for k in ("min_height", "min_width"))
    return [_padding(t, where, (sides[0], sides[1]), "position")]


def _padding(t: dict[str, Any], where: str, at_least: tuple[int | None, int | None], key: str) -> Pad:
    position = t.get(key, "center")
    if position not in ("center", "top_left", "top_right", "bottom_left", "bottom_right"):
        raise Refused(f"{where}: {key} {position!r} cannot be reproduced")
    border = t.get("border_mode", 4)
    if border not in _BORDERS:
        raise Refused(f"{where}: border_mode {border!r} cannot be reproduced")
    fill = t.get("fill", t.get("value"))
    value = (0.0,) if fill is None else f.numbers(fill, f"{where}.fill")
    return Pad(at_least=at_least, position=str(position), mode=_BORDERS[border], value=value)


def _a_normalize(t: dict[str, Any], where: str) -> list[Step]:
    _only(t, {"mean", "std", "max_pixel_value", "normalization"}, where)
    if t.get("normalization", "standard") != "standard":
        raise Refused(f"{where}: normalization {t.get('normalization')!r} cannot be reproduced")
    top = f.number(t.get("max_pixel_value", 255.0), f"{where}.max_pixel_value")
    if top <= 0:
        raise PreprocessError(f"{where}.max_pixel_value is {top}; expected a positive number")
    mean = f.numbers(t.get("mean", (0.485, 0.456, 0.406)), f"{where}.mean")
    std = f.numbers(t.get("std", (0.229, 0.224, 0.225)), f"{where}.std")
    return [Scale(1 / top), Normalize(mean, std)]


def _a_to_float(t: dict[str, Any], where: str) -> list[Step]:
    _only(t, {"max_value"}, where)
    top = t.get("max_value")
    return [Scale(1 / f.number(255.0 if top is None else top, f"{where}.max_value"))]


def _a_to_gray(t: dict[str, Any], where: str) -> list[Step]:
    _only(t, {"num_output_channels", "method"}, where)
    if t.get("method", "weighted_average") != "weighted_average":
        raise Refused(f"{where}: method {t.get('method')!r} cannot be reproduced")
    channels = t.get("num_output_channels", 3)
    grey = Convert(to="L", formula="opencv")
    return [grey] if channels == 1 else [grey, Convert(to="RGB")]


def _a_to_tensor(t: dict[str, Any], where: str) -> list[Step]:
    _only(t, set(), where)
    return []  # HWC to CHW: the input's layout says it


_ALBUMENTATIONS: dict[str, Callable[[dict[str, Any], str], list[Step]]] = {
    "Resize": _a_resize,
    "LongestMaxSize": _a_max_size(True),
    "SmallestMaxSize": _a_max_size(False),
    "CenterCrop": _a_center_crop,
    "Crop": _a_crop,
    "PadIfNeeded": _a_pad,
    "Normalize": _a_normalize,
    "ToFloat": _a_to_float,
    "ToGray": _a_to_gray,
    "ToTensorV2": _a_to_tensor,
}


# OpenVINO Accuracy Checker


def openvino(data: Any, name: str) -> Traced:
    """A `preprocessing:` list (or a mapping that holds one); images are read as OpenCV reads them (BGR)."""
    items = data.get("preprocessing") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise PreprocessError(f"{name} holds no preprocessing list")
    read = {"mode=RGB": f"when the images are read as RGB, not as the BGR Accuracy Checker reads for {name}"}
    out: Traced = [
        (Decode(mode="BGR", library="opencv"), Origin("the image Accuracy Checker reads", name, phrases=read))
    ]
    for i, item in enumerate(items):
        where = f"{name}: preprocessing {i}"
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise PreprocessError(f"{where} has no type")
        maker = _OPENVINO.get(item["type"])
        if maker is None:
            raise Refused(f"{where}: Accuracy Checker's {item['type']} has no step that reproduces it")
        entry = f"`{item['type']}` (preprocessing {i})"
        out.extend((step, _ov_origin(step, entry, name)) for step in maker(item, f"{where} ({item['type']})"))
    return out


def _ov_origin(step: Step, entry: str, name: str) -> Origin:
    options: dict[str, tuple[str, Any]] = {}
    phrases: dict[str, str] = {}
    if isinstance(step, Resize):
        options["filter"] = ("interpolation", spelled({v: k for k, v in _OV_FILTERS.items()}))
    elif isinstance(step, Pad):
        options["position"] = ("pad_type", spelled({v: k for k, v in _OV_PAD_TYPES.items()}))
        options["mode"] = ("numpy_pad_mode", written)
        options["value"] = ("pad_value", _one_or_all)
    elif isinstance(step, Normalize):
        options = {"mean": ("mean", written), "std": ("std", written)}
    elif isinstance(step, Convert) and step.to in ("RGB", "BGR"):
        phrases[f"to={'BGR' if step.to == 'RGB' else 'RGB'}"] = f"without {entry} in {name}"  # then a no-op
    return Origin(entry, name, options, phrases)


def _ov_only(item: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(k for k in item if k not in allowed | {"type"})
    if extra:
        raise Refused(f"{where}: option(s) {', '.join(extra)} cannot be reproduced")


def _ov_size(item: dict[str, Any], where: str) -> tuple[int, int]:
    if "size" in item:
        s = f.side(item["size"], f"{where}.size")
        return s, s
    return f.side(item.get("dst_height"), f"{where}.dst_height"), f.side(item.get("dst_width"), f"{where}.dst_width")


_OV_FILTERS = {"NEAREST": "nearest", "LINEAR": "linear", "CUBIC": "cubic", "AREA": "area", "LANCZOS4": "lanczos4"}


def _ov_resize(item: dict[str, Any], where: str) -> list[Step]:
    allowed = {"size", "dst_width", "dst_height", "aspect_ratio_scale", "interpolation", "resize_realization"}
    _ov_only(item, allowed | {"use_pillow"}, where)
    if item.get("use_pillow") or item.get("resize_realization", "opencv") != "opencv":
        raise Refused(f"{where}: only resize_realization opencv is reproduced")
    interpolation = str(item.get("interpolation", "LINEAR")).upper()
    if interpolation not in _OV_FILTERS:
        raise Refused(f"{where}: interpolation {interpolation} cannot be reproduced")
    h, w = _ov_size(item, where)
    base = Resize(library="opencv", filter=_OV_FILTERS[interpolation])
    mode = item.get("aspect_ratio_scale")
    # Accuracy Checker: int(side * ratio), the ratio a float computed first
    trunc = replace(base, rounding="floor", arithmetic="float_scale_first")
    if mode is None:
        return [replace(base, size=(h, w))]
    if mode == "greater" and h == w:
        return [replace(trunc, shorter_side=h)]
    if mode == "fit_to_window":
        return [replace(trunc, fit=(h, w))]
    raise Refused(f"{where}: aspect_ratio_scale {mode!r} cannot be reproduced")


def _ov_crop(item: dict[str, Any], where: str) -> list[Step]:
    _ov_only(item, {"size", "dst_width", "dst_height"}, where)
    return [Crop(center=_ov_size(item, where))]


_OV_PAD_TYPES = {"center": "center", "right_bottom": "top_left", "left_top": "bottom_right"}


def _ov_padding(item: dict[str, Any], where: str) -> list[Step]:
    _ov_only(item, {"size", "dst_width", "dst_height", "pad_type", "pad_value", "numpy_pad_mode", "stride"}, where)
    pad_type = item.get("pad_type", "center")
    if pad_type not in _OV_PAD_TYPES:
        raise Refused(f"{where}: pad_type {pad_type!r} cannot be reproduced")
    mode = item.get("numpy_pad_mode", "constant")
    if mode not in ("constant", "edge", "reflect", "symmetric"):
        raise Refused(f"{where}: numpy_pad_mode {mode!r} cannot be reproduced")
    value = _ov_numbers(item.get("pad_value", 0), f"{where}.pad_value")
    common = Pad(position=_OV_PAD_TYPES[pad_type], mode=mode, value=value)
    if "stride" in item:
        if any(k in item for k in ("size", "dst_width", "dst_height")):
            raise Refused(f"{where}: stride together with a size cannot be reproduced")
        return [replace(common, multiple_of=f.side(item["stride"], f"{where}.stride"))]
    return [replace(common, to=_ov_size(item, where))]


def _ov_numbers(value: Any, where: str) -> tuple[float, ...]:
    """A number, a list, or a string such as "(104, 117, 123)" or "104,117,123"."""
    if isinstance(value, str):
        parts = [p for p in value.strip("()[] ").replace(",", " ").split() if p]
        try:
            value = [float(p) for p in parts]
        except ValueError as e:
            raise Refused(f"{where} is {value!r}; only numbers are reproduced (no named presets)") from e
    return f.numbers(value, where)


def _ov_normalization(item: dict[str, Any], where: str) -> list[Step]:
    _ov_only(item, {"mean", "std"}, where)
    mean = _ov_numbers(item.get("mean", 0), f"{where}.mean")
    std = _ov_numbers(item.get("std", 1), f"{where}.std")
    if any(s == 0 for s in std):
        raise PreprocessError(f"{where}.std holds a zero")
    return [Normalize(mean, std)]


def _ov_convert(to: str, formula: str = "pillow") -> Callable[[dict[str, Any], str], list[Step]]:
    def make(item: dict[str, Any], where: str) -> list[Step]:
        _ov_only(item, set(), where)
        return [Convert(to=to, formula=formula)]

    return make


_OPENVINO: dict[str, Callable[[dict[str, Any], str], list[Step]]] = {
    "resize": _ov_resize,
    "crop": _ov_crop,
    "center_crop": _ov_crop,
    "padding": _ov_padding,
    "normalization": _ov_normalization,
    "bgr_to_rgb": _ov_convert("RGB"),
    "rgb_to_bgr": _ov_convert("BGR"),
    "bgr_to_gray": _ov_convert("L", "opencv"),
    "rgb_to_gray": _ov_convert("L", "opencv"),
}
