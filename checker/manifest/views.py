"""Views of a manifest that matched the schema: each part is walked here, once, with its absent parts as empty.

The stages read the rules and variants through these instead of each walking `ctx.data` with its own fallbacks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Keys = tuple[str | int, ...]


@dataclass(frozen=True)
class RulePlace:
    """One rule, where it stands in the manifest, and what it judges."""

    rule: dict[str, Any]
    keys: Keys  # ("comparison", "rules", 0) or ("variants", 1, "drift_rules", 0)
    graph: str  # "baseline" or the variant's name
    against: str  # "reference" (expected outputs) or "baseline" (the baseline's own outputs: drift rules)


def section(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def items(value: object) -> list[dict[str, Any]]:
    """The mappings of a list (a schema-valid manifest has nothing else there)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def variants(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    return items(data.get("variants"))


def rules(data: Mapping[str, Any]) -> Iterator[RulePlace]:
    """Every rule: the baseline's, then each variant's rules and drift rules, in manifest order."""
    for i, rule in enumerate(items(section(data, "comparison").get("rules"))):
        yield RulePlace(rule, ("comparison", "rules", i), "baseline", "reference")
    for v, variant in enumerate(items(data.get("variants"))):
        name = str(variant.get("name"))
        for group, against in (("rules", "reference"), ("drift_rules", "baseline")):
            for i, rule in enumerate(items(variant.get(group))):
                yield RulePlace(rule, ("variants", v, group, i), name, against)


def answer_sources(data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each declared answer's name -> the graph outputs it reads (`from`)."""
    out: dict[str, list[str]] = {}
    for answer in items(data.get("answers")):
        found = answer.get("from")
        out[str(answer.get("name"))] = [found] if isinstance(found, str) else [str(f) for f in found or []]
    return out


def streamed_inputs(data: Mapping[str, Any]) -> set[str]:
    """The inputs a streaming application feeds one chunk at a time (`preprocessing.stream` of an audio input):
    a case that feeds one stores every tensor with one entry per call on a leading axis."""
    out = set()
    for entry in items(data.get("inputs")):
        prep = entry.get("preprocessing")
        if isinstance(prep, Mapping) and prep.get("kind") == "audio" and prep.get("stream") is not None:
            out.add(str(entry.get("name")))
    return out
