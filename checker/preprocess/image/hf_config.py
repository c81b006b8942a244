"""Read a Hugging Face image-processor file (preprocessor_config.json) into the manifest's image fields.

Only what the Pillow-based image processors do with the common settings is mapped. A setting that changes
the result in a way the checker does not reproduce is refused, tied to the field it would have set: a field
written explicitly beside `config:` replaces that part of the file, and its refusal with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.bundle.paths import regular_size
from checker.preprocess.errors import PreprocessError

MAX_CONFIG_BYTES = 1 << 20

# PIL.Image.Resampling values as the processors save them.
_RESAMPLE = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}

# An integer `size` means a shorter side for these processors and a square for the others listed below.
_INT_SIZE_SHORTER = {
    "CLIPImageProcessor",
    "ConvNextImageProcessor",
    "ChineseCLIPImageProcessor",
    "BitImageProcessor",
    "MobileNetV1ImageProcessor",
    "MobileNetV2ImageProcessor",
    "MobileViTImageProcessor",
}
_INT_SIZE_SQUARE = {"ViTImageProcessor", "DeiTImageProcessor", "BeitImageProcessor", "SiglipImageProcessor"}

_UNDERSTOOD = {
    "do_resize",
    "size",
    "resample",
    "do_center_crop",
    "crop_size",
    "do_rescale",
    "rescale_factor",
    "do_normalize",
    "image_mean",
    "image_std",
    "do_convert_rgb",
    "do_flip_channel_order",
    "crop_pct",
    "default_to_square",
}
# Bookkeeping keys that do not change pixels.
_IGNORED = {
    "image_processor_type",
    "feature_extractor_type",
    "processor_class",
    "_processor_class",
    "auto_map",
    "data_format",
    "input_data_format",
    "return_tensors",
    "_valid_processor_keys",
}


@dataclass
class HfImageConfig:
    """The manifest fields a preprocessor_config.json amounts to, and what cannot be reproduced."""

    fields: dict[str, Any] = field(default_factory=dict)
    refusals: dict[str, str] = field(default_factory=dict)  # manifest field -> why


def read_config(path: Path, name: str) -> dict[str, Any]:
    try:
        if regular_size(path) > MAX_CONFIG_BYTES:
            raise PreprocessError(f"{name} is larger than {MAX_CONFIG_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PreprocessError(f"{name} cannot be read as JSON: {e}") from e
    except RecursionError as e:
        raise PreprocessError(f"{name} nests too deeply to be an image-processor file") from e
    if not isinstance(data, dict):
        raise PreprocessError(f"{name} does not hold a JSON object")
    return data


def map_config(cfg: dict[str, Any], name: str) -> HfImageConfig:
    out = HfImageConfig()
    kind = processor_type(cfg)
    if kind.endswith("Fast"):
        out.refusals["resize"] = (
            f"{name} names {kind}, which resizes with torchvision rather than Pillow; the checker does not "
            "reproduce it (declare resize explicitly if the application uses the Pillow-based processor)"
        )
    out.fields["color"] = "BGR" if cfg.get("do_flip_channel_order") else "RGB"
    _map_resize(cfg, kind, name, out)
    _map_crop(cfg, name, out)
    _map_values(cfg, name, out)
    unknown = sorted(k for k, v in cfg.items() if k not in _UNDERSTOOD | _IGNORED and v)
    if unknown:
        settings = ", ".join(f"{k}: {json.dumps(cfg[k])}" for k in unknown)
        out.refusals["config"] = f"{name} sets what the checker does not reproduce: {settings}"
    return out


def processor_type(cfg: dict[str, Any]) -> str:
    kind = cfg.get("image_processor_type") or cfg.get("feature_extractor_type") or ""
    return str(kind).replace("FeatureExtractor", "ImageProcessor")


def _enabled(cfg: dict[str, Any], flag: str, value_key: str | None) -> bool:
    """A flag the file leaves out is on when its value is saved (older files save only the values);
    rescaling (value_key None) is on by default, as in every image processor."""
    flag_value = cfg.get(flag)
    if flag_value is not None:
        return bool(flag_value)
    return value_key is None or cfg.get(value_key) is not None


def _map_resize(cfg: dict[str, Any], kind: str, name: str, out: HfImageConfig) -> None:
    if "resize" in out.refusals:
        return
    if not _enabled(cfg, "do_resize", "size"):
        out.fields["resize"] = {"mode": "none"}
        return
    resample = cfg.get("resample")
    if resample not in _RESAMPLE:
        out.refusals["resize"] = f"{name}: resample {resample!r} is not one of Pillow's filters (0 to 5)"
        return
    try:
        resize, crop = _resize_from_size(cfg, kind)
    except _Refused as e:
        out.refusals["resize"] = f"{name}: {e}"
        return
    out.fields["resize"] = {**resize, "interpolation": _RESAMPLE[resample]}
    if crop is not None:
        out.fields["crop"] = crop


class _Refused(Exception):
    pass


def _resize_from_size(cfg: dict[str, Any], kind: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if cfg.get("crop_pct") is not None and kind != "ConvNextImageProcessor":
        raise _Refused(f"crop_pct with {kind or 'this processor'} is not reproduced")
    size = _size_dict(cfg.get("size"), _int_size_is_square(cfg, kind))
    if cfg.get("crop_pct") is not None:
        return _convnext_resize(size, cfg["crop_pct"])
    if set(size) == {"height", "width"}:
        return {"mode": "exact", "size": [size["height"], size["width"]]}, None
    if set(size) == {"shortest_edge"}:
        # get_resize_output_image_size truncates the longer side (int()), where the manifest rounds.
        return {"mode": "shorter_side", "size": size["shortest_edge"], "rounding": "floor"}, None
    raise _Refused(f"size {json.dumps(cfg.get('size'))} is not one the checker reproduces")


def _int_size_is_square(cfg: dict[str, Any], kind: str) -> bool | None:
    if isinstance(cfg.get("default_to_square"), bool):
        return bool(cfg["default_to_square"])
    if kind in _INT_SIZE_SHORTER:
        return False
    return True if kind in _INT_SIZE_SQUARE else None


def _size_dict(size: Any, square: bool | None) -> dict[str, int]:
    if isinstance(size, dict) and size and all(isinstance(v, int) for v in size.values()):
        return {str(k): int(v) for k, v in size.items()}
    if isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(v, int) for v in size):
        return {"height": size[0], "width": size[1]}
    if isinstance(size, int) and not isinstance(size, bool):
        if square is None:
            raise _Refused(
                f"size {size} means a square for some image processors and a shorter side for others; "
                "declare resize explicitly"
            )
        return {"height": size, "width": size} if square else {"shortest_edge": size}
    raise _Refused(f"size {json.dumps(size)} is not one the checker reproduces")


def _convnext_resize(size: dict[str, int], crop_pct: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    # ConvNextImageProcessor: below 384 it resizes the shorter side to size / crop_pct, then crops size.
    if set(size) != {"shortest_edge"}:
        raise _Refused("crop_pct with a size other than shortest_edge is not reproduced")
    if isinstance(crop_pct, bool) or not isinstance(crop_pct, (int, float)) or not 0 < crop_pct <= 1:
        raise _Refused(f"crop_pct {crop_pct!r} is not a fraction")
    edge = size["shortest_edge"]
    if edge >= 384:
        return {"mode": "exact", "size": [edge, edge]}, {"mode": "none"}
    shorter = int(edge / crop_pct)
    return {"mode": "shorter_side", "size": shorter, "rounding": "floor"}, {
        "mode": "center",
        "size": [edge, edge],
    }


def _map_crop(cfg: dict[str, Any], name: str, out: HfImageConfig) -> None:
    if "crop" in out.fields:
        return
    if not _enabled(cfg, "do_center_crop", "crop_size"):
        out.fields["crop"] = {"mode": "none"}
        return
    try:
        crop = _size_dict(cfg.get("crop_size"), True)
    except _Refused as e:
        out.refusals["crop"] = f"{name}: crop_size: {e}"
        return
    if set(crop) != {"height", "width"}:
        out.refusals["crop"] = f"{name}: crop_size {json.dumps(cfg.get('crop_size'))} is not [height, width]"
        return
    out.fields["crop"] = {"mode": "center", "size": [crop["height"], crop["width"]]}


def _map_values(cfg: dict[str, Any], name: str, out: HfImageConfig) -> None:
    rescale = _enabled(cfg, "do_rescale", None)
    out.fields["scale"] = cfg.get("rescale_factor", 1 / 255) if rescale else 1
    if _enabled(cfg, "do_normalize", "image_mean"):
        if cfg.get("image_mean") is None or cfg.get("image_std") is None:
            out.refusals["mean"] = f"{name}: do_normalize is set without image_mean and image_std"
            return
        out.fields["mean"] = cfg["image_mean"]
        out.fields["std"] = cfg["image_std"]
