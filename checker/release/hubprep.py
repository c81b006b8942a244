"""The preprocessing a model folder's own files declare, as manifest blocks: the image processor's
`preprocessor_config.json` (read by the image importer at verify time, `config:`), the tokenizer with its
`tokenizer_config.json` and tokenizer.json's saved truncation and padding, and Ultralytics' letterbox from the
graph's `imgsz` (grey 114, 0-1 RGB), as its `predict` prepares an image."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checker.release.hubfolder import ULTRALYTICS, FolderError, ModelFolder, inside, read_json

DERIVED = {"attention_mask": "attention_mask", "token_type_ids": "type_ids"}
MAX_TEXT_LENGTH = 1 << 20  # tokenizer_config's "no limit" is 1e30: that is no max_length to declare
MAX_TOKENIZER_BYTES = 100 << 20  # a multilingual tokenizer.json is tens of megabytes (as text/tokenize.py)
LETTERBOX_GREY = 114


@dataclass(frozen=True)
class Prep:
    block: dict[str, Any]
    why: str


def preprocessing(folder: ModelFolder, entry: Mapping[str, Any], inputs: Sequence[Mapping[str, Any]]) -> Prep | None:
    name = str(entry.get("name"))
    if folder.layout == ULTRALYTICS and entry.get("meaning") == "image":
        return _letterbox(folder)
    if entry.get("meaning") == "image" and folder.file("preprocessor_config.json"):
        return Prep({"kind": "image", "config": "preprocessor_config.json"}, "preprocessor_config.json")
    if folder.file("tokenizer.json") is None:
        return None
    if name == "input_ids":
        return _text(folder)
    if name in DERIVED and any(str(i.get("name")) == "input_ids" for i in inputs):
        block = {"kind": "derived", "from": "input_ids", "field": DERIVED[name]}
        return Prep(block, f"the tokenizer's {DERIVED[name]} for input_ids")
    return None


def _text(folder: ModelFolder) -> Prep:
    """The tokenizer as the application calls it: the saved truncation and padding, else the model's length."""
    tokenizer = read_json(inside(folder.root, "tokenizer.json"), MAX_TOKENIZER_BYTES)
    config = read_json(inside(folder.root, "tokenizer_config.json")) if folder.file("tokenizer_config.json") else {}
    block: dict[str, Any] = {"kind": "text", "tokenizer": "tokenizer.json"}
    said = ["tokenizer.json"]
    template = _template(folder)
    if template is not None:
        block["template"] = template
        said.append("config_sentence_transformers.json's default prompt")
    truncation, padding = tokenizer.get("truncation"), tokenizer.get("padding")
    length = None
    if isinstance(truncation, dict) and isinstance(truncation.get("max_length"), int):
        length = truncation["max_length"]
        said.append("its saved truncation")
    elif isinstance(config.get("model_max_length"), int) and 0 < config["model_max_length"] <= MAX_TEXT_LENGTH:
        length = config["model_max_length"]
        said.append("tokenizer_config.json's model_max_length (truncated as transformers.js's pipelines do)")
    if length is not None:
        block.update({"max_length": length, "truncation": True})
    strategy = padding.get("strategy") if isinstance(padding, dict) else None
    if isinstance(strategy, dict) and "Fixed" in strategy and length is not None:
        block["padding"] = "max_length"
        said.append("its saved fixed padding")
    if config.get("add_special_tokens") is False:
        block["add_special_tokens"] = False
        said.append("tokenizer_config.json's add_special_tokens: false")
    return Prep(block, ", ".join(said))


def _template(folder: ModelFolder) -> str | None:
    """sentence-transformers' default prompt ("query: "), prepended to the text as it encodes."""
    if folder.file("config_sentence_transformers.json") is None:
        return None
    config = read_json(inside(folder.root, "config_sentence_transformers.json"))
    prompts, default = config.get("prompts"), config.get("default_prompt_name")
    if not isinstance(prompts, dict) or not isinstance(default, str):
        return None
    prompt = prompts.get(default)
    return f"{prompt}{{text}}" if isinstance(prompt, str) and prompt else None


def ultralytics_value(metadata: Mapping[str, str], key: str) -> Any:
    """A metadata value as Ultralytics writes it (a Python literal: "[640, 640]", "{0: 'person'}")."""
    text = metadata.get(key)
    if text is None:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def image_size(metadata: Mapping[str, str]) -> tuple[int, int]:
    size = ultralytics_value(metadata, "imgsz")
    if isinstance(size, int):
        size = [size, size]
    ok = isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(v, int) and 0 < v <= 8192 for v in size)
    if not ok:
        raise FolderError(f"the graph's metadata imgsz is {metadata.get('imgsz')!r}; expected [height, width]")
    return int(size[0]), int(size[1])


def _letterbox(folder: ModelFolder) -> Prep:
    from checker.release.graphfacts import read_graph

    metadata = read_graph(folder.baseline).metadata
    height, width = image_size(metadata)
    steps = [
        {"decode": {"mode": "RGB", "library": "opencv"}},
        {"resize": {"fit": [height, width], "rounding": "half_even", "filter": "linear", "library": "opencv"}},
        {"pad": {"to": [height, width], "value": LETTERBOX_GREY}},
        {"scale": 1 / 255},
        {"layout": "NCHW"},
    ]
    why = (
        f"Ultralytics' letterbox to imgsz {[height, width]} (stride {metadata.get('stride', '?')}): read and "
        f"resized by OpenCV (cv2.INTER_LINEAR, sides rounded by Python's round), centred, grey {LETTERBOX_GREY}, "
        "RGB scaled to 0-1"
    )
    return Prep({"kind": "image", "steps": steps}, why)
