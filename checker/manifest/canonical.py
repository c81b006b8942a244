"""The manifest's data in the bundle digest: one line per field, so the digest covers every rule, tolerance and
preprocessing step, and `checker verify` can name the field that changed since `checker lock`.

A field's line is `<sha256 of its canonical JSON>  manifest:<JSON pointer>`. No bundle path may start with
`manifest:` (bundle/paths.py refuses it), so no file's line can be mistaken for a field's. `release.digest` is
left out: it holds the digest itself. A list of scalars (a shape, a mean) is one field; mappings and lists of
mappings are followed down to such leaves.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

PREFIX = "manifest:"
FIELD_START = PREFIX + "/"  # a field line's name: the prefix, then a JSON pointer
LEFT_OUT = "/release/digest"


def canonical_json(value: Any) -> str:
    """One spelling for equal data: keys sorted, no spaces, text as UTF-8 (YAML and JSON manifests agree)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")  # RFC 6901


def _leaves(value: Any, pointer: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaves(child, f"{pointer}/{_escape(str(key))}")
    elif isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        for index, child in enumerate(value):
            yield from _leaves(child, f"{pointer}/{index}")
    else:
        yield pointer, value


def field_digests(data: dict[str, Any]) -> dict[str, str]:
    """`manifest:<pointer>` -> sha256 of the field's canonical JSON, for every field but `release.digest`."""
    out = {}
    for pointer, value in _leaves(data, ""):
        if pointer != LEFT_OUT:
            out[PREFIX + pointer] = hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()
    return out


def is_field(name: str) -> bool:
    return name.startswith(FIELD_START)


def field_keys(name: str) -> tuple[str | int, ...]:
    """The manifest keys of a field line's name (list indices as ints), for its line and its written path."""
    keys: list[str | int] = []
    for part in name.removeprefix(PREFIX).split("/")[1:]:
        text = part.replace("~1", "/").replace("~0", "~")
        keys.append(int(text) if text.isdigit() else text)
    return tuple(keys)


def release_lines(file_digests: dict[str, str], data: dict[str, Any]) -> dict[str, str]:
    """Every line the bundle digest hashes: the named files' and the manifest's fields'."""
    return {**file_digests, **field_digests(data)}


def manifest_digest(data: dict[str, Any]) -> str:
    """`sha256:` + SHA-256 of the whole manifest's canonical JSON, `release.digest` left out: what a report
    records as the manifest it judged, so reports of different manifests are never joined into one verdict."""
    release = data.get("release")
    if isinstance(release, dict) and "digest" in release:
        data = {**data, "release": {k: v for k, v in release.items() if k != "digest"}}
    return "sha256:" + hashlib.sha256(canonical_json(data).encode("utf-8", "surrogatepass")).hexdigest()
