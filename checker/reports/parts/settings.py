"""The manifest's settings that make a check stronger or weaker (manifest.strength), as a report carries them:
two reports of one bundle compare them to name every loosening that is not a rule's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checker.reports.parts.values import JsonValue, integer, json_value, mappings, text


@dataclass(frozen=True)
class DeclaredSetting:
    key: str  # "inputs.pixel_values.tolerance", "case dusk raw pixel_values"
    value: JsonValue
    way: str  # "higher", "lower", "present" or "fallback": how the setting weakens a check
    line: int | None = None  # where the manifest declares it

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "way": self.way, "line": self.line}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeclaredSetting:
        key, way = text(data.get("key")) or "", text(data.get("way")) or ""
        return cls(key, json_value(data.get("value")), way, integer(data.get("line")))


def declared_settings(data: object) -> list[DeclaredSetting]:
    return [DeclaredSetting.from_dict(s) for s in mappings(data)]
