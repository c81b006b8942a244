"""Reading label mappings: text files, JSON lists or index mappings, and graph metadata, never by eval."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from checker.bundle.paths import regular_size

MAX_LABEL_BYTES = 16 << 20
# Python's parser spends a few hundred bytes per element: a 16 MiB literal would take gigabytes.
MAX_LITERAL_BYTES = 1 << 20


class LabelError(ValueError):
    """Labels that cannot be read; the message says why."""


def from_text(text: str, source: str) -> list[str]:
    """Graph metadata: a JSON list or mapping, a Python literal such as {0: 'cat'}, or one label per line."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        for parse in (json.loads, _literal):
            try:
                return from_value(parse(stripped), source)
            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                continue
        raise LabelError(f"{source} looks like JSON or a Python literal but cannot be parsed as one")
    return from_lines(text)


def from_lines(text: str) -> list[str]:
    """One label per line; a final newline adds no label. A label may itself look like '[background]'."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline adds no label
    return [line.rstrip("\r") for line in lines]


def _literal(text: str) -> Any:
    if len(text) > MAX_LITERAL_BYTES:
        raise ValueError(f"more than {MAX_LITERAL_BYTES} characters")
    return ast.literal_eval(text)


def from_value(value: Any, source: str) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, dict):
        try:
            keys = sorted(value, key=lambda k: int(k))
        except (TypeError, ValueError) as exc:
            raise LabelError(f"{source}: a label mapping's keys must be class indices") from exc
        indices = [int(k) for k in keys]
        if indices != list(range(len(indices))):
            raise LabelError(f"{source}: the label mapping's indices are not 0..{len(indices) - 1} without gaps")
        return [str(value[k]) for k in keys]
    raise LabelError(f"{source} holds neither a list nor an index mapping")


def from_file(path: Path, rel: str) -> list[str]:
    try:
        size = regular_size(path)
    except OSError as exc:
        raise LabelError(f"'{rel}' cannot be read ({exc.strerror})") from exc
    if size > MAX_LABEL_BYTES:
        raise LabelError(f"'{rel}' is {size} bytes; at most {MAX_LABEL_BYTES}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LabelError(f"'{rel}' is not UTF-8 text") from exc
    if path.suffix.lower() == ".json":
        try:
            return from_value(json.loads(text), f"'{rel}'")
        except json.JSONDecodeError as exc:
            raise LabelError(f"'{rel}' is not valid JSON (line {exc.lineno}: {exc.msg})") from exc
        except RecursionError as exc:
            raise LabelError(f"'{rel}' nests too deeply to be a label list") from exc
    return from_lines(text)


def from_metadata(model: Any, key: str) -> list[str]:
    props = {p.key: p.value for p in model.metadata_props}
    if key not in props:
        known = ", ".join(sorted(props)) or "none"
        raise LabelError(f"the graph has no metadata key '{key}' (it has: {known})")
    if len(props[key]) > MAX_LABEL_BYTES:
        raise LabelError(f"metadata '{key}' is larger than {MAX_LABEL_BYTES} bytes")
    return from_text(props[key], f"metadata '{key}'")
