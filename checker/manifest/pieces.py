"""One digest per piece of a release: the manifest fields that make it and the files they name.

Two reports of the same bundle say which pieces changed by comparing these (`checker report diff`). A
piece's digest covers its manifest fields as canonical JSON and the sha256 of every file named under
them, so an edited label file and an edited `labels:` block both change `labels`.

Each variant has a digest of its own (`variants.NAME`: its fields and its graph's files), so that an edited
int8 file is named as that variant's change, not as the graph's.

The rules (`comparison.rules`, each variant's `rules` and `drift_rules`) have a digest of their own, `rules`,
beside the seven pieces: a loosened threshold is a change to the rules, not to the graph or the cases.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from checker.manifest.named import named_files


def piece_of(keys: tuple[str | int, ...]) -> str | None:
    """Which piece the manifest field at `keys` belongs to."""
    head = keys[0] if keys else None
    if head == "graph":
        return "external_weights" if len(keys) > 1 and keys[1] == "external_data" else "graph"
    return {
        "variants": "graph",
        "inputs": "preprocessing",
        "outputs": "labels",
        "comparison": "comparison_inputs",
        "runtime": "runtime",
        "validation": "validation_command",
        "answers": "labels",  # an answer's own label file
    }.get(str(head))


RULES = "rules"  # the digest beside the pieces that covers every rule
VARIANT = "variants."  # each variant's digest, "variants.NAME": an int8 file edited is that variant's change
RULE_KEYS = ("rules", "drift_rules")  # a variant's fields that are rules


def _fields(data: Mapping[str, Any]) -> dict[str, Any]:
    graph = data.get("graph") if isinstance(data.get("graph"), Mapping) else {}
    assert isinstance(graph, Mapping)
    variants = _list(data.get("variants"))
    comparison = data.get("comparison")
    return {
        "graph": {
            "graph": {k: v for k, v in graph.items() if k != "external_data"},
            "inputs": [_without(i, "preprocessing") for i in _list(data.get("inputs"))],
            "outputs": [_without(o, "labels") for o in _list(data.get("outputs"))],
        },
        "external_weights": graph.get("external_data"),
        "preprocessing": [
            i.get("preprocessing") if isinstance(i, Mapping) else None for i in _list(data.get("inputs"))
        ],
        "labels": [o.get("labels") if isinstance(o, Mapping) else None for o in _list(data.get("outputs"))],
        "comparison_inputs": _without(comparison, "rules") if comparison is not None else None,
        "runtime": data.get("runtime"),
        "validation_command": data.get("validation"),
        RULES: {
            "comparison": comparison.get("rules") if isinstance(comparison, Mapping) else None,
            # What the rules on answers judge: a changed threshold or NMS is a change to the rules.
            **({"answers": data.get("answers")} if "answers" in data else {}),
            "variants": [
                {k: v.get(k) for k in ("name", *RULE_KEYS)} if isinstance(v, Mapping) else None for v in variants
            ],
        },
        **{_variant_key(v, i): _without(v, *RULE_KEYS) for i, v in enumerate(variants)},
    }


def _variant_key(variant: object, index: int) -> str:
    name = variant.get("name") if isinstance(variant, Mapping) else None
    return VARIANT + (name if isinstance(name, str) and name else f"#{index}")


def piece_label(key: str) -> str:
    """A digest's name as a reader reads it: "preprocessing", "the variant int8's graph"."""
    if key.startswith(VARIANT):
        return f"the variant {key[len(VARIANT) :]}'s graph"
    return key.replace("_", " ")


def piece_digests(data: Mapping[str, Any], root: Path, file_digests: Mapping[str, str]) -> dict[str, str]:
    """piece (and `rules`) -> "sha256:..." over its manifest fields and its files' digests (missing files
    count as absent)."""
    files: dict[str, dict[str, str | None]] = {}
    variants = _list(data.get("variants"))
    for entry in named_files(dict(data), root):
        piece = piece_of(entry.keys)
        if entry.keys[:1] == ("variants",) and isinstance(index := entry.keys[1], int) and index < len(variants):
            piece = _variant_key(variants[index], index)
        if piece is not None:
            files.setdefault(piece, {})[entry.rel] = file_digests.get(entry.rel)
    out = {}
    for piece, fields in _fields(data).items():
        canonical = json.dumps({"fields": fields, "files": files.get(piece, {})}, sort_keys=True, default=str)
        out[piece] = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return out


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _without(value: object, *keys: str) -> object:
    return {k: v for k, v in value.items() if k not in keys} if isinstance(value, Mapping) else value
