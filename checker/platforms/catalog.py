"""The CPU classes a platform names, how a manifest declares them, and which target names mean which class.

A class is an architecture and the instruction-set features that change onnxruntime's kernels: the x86-64
micro-architecture level (v2: SSE4.2; v3: AVX2 and FMA; v4: AVX-512) with or without VNNI (the int8 dot
product that keeps U8S8 sums from saturating), and aarch64 with or without the dot-product and i8mm
instructions. Its name is the level and its features joined by '-': `x86-64-v3`, `x86-64-v4-vnni`,
`aarch64-dotprod`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from checker.manifest.model.runtime import Platform as Declared

X86 = "x86_64"
ARM = "aarch64"
X86_LEVELS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")
FEATURES = {X86: ("vnni",), ARM: ("dotprod", "i8mm")}
TARGET = "target"  # --platform target: every platform the manifest declares


@dataclass(frozen=True)
class Platform:
    """One CPU class, under the name the manifest or the command line gives it."""

    name: str
    arch: str
    level: str | None  # the x86-64 level; None on aarch64
    features: tuple[str, ...]  # sorted, from FEATURES[arch]

    @property
    def cpu_class(self) -> str:
        return class_name(self.arch, self.level, self.features)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arch": self.arch, "class": self.cpu_class}
        if self.level is not None:
            out["level"] = self.level
        out["features"] = list(self.features)
        return out


def class_name(arch: str, level: str | None, features: Sequence[str]) -> str:
    return "-".join([level or arch, *sorted(features)])


def known_classes() -> list[Platform]:
    """Every class a --platform NAME may name without a manifest declaring it."""
    out = [Platform(class_name(X86, lv, f), X86, lv, f) for lv in X86_LEVELS for f in ((), ("vnni",))]
    for features in ((), ("dotprod",), ("i8mm",), ("dotprod", "i8mm")):
        out.append(Platform(class_name(ARM, None, features), ARM, None, features))
    return out


def from_manifest(entry: Declared) -> Platform:
    """A `runtime.platforms[]` entry as a Platform."""
    level = entry.cpu if entry.arch == X86 else None
    features = tuple(sorted(entry.features)) if entry.features else ()
    name = entry.name or class_name(entry.arch, level, features)
    return Platform(name, entry.arch, level, features)


def resolve(names: Sequence[str], declared: Sequence[Declared]) -> tuple[list[Platform], list[str]]:
    """The platforms --platform NAMEs mean (a declared name, a class name, or `target`), and the unknown names."""
    mine = [from_manifest(entry) for entry in declared]
    by_name = {p.cpu_class: p for p in known_classes()} | {p.name: p for p in mine}
    chosen: dict[str, Platform] = {}
    unknown = []
    for name in names:
        for platform in mine if name == TARGET else [by_name[name]] if name in by_name else []:
            chosen.setdefault(platform.name, platform)
        if name != TARGET and name not in by_name:
            unknown.append(name)
    return list(chosen.values()), unknown


_V4_VNNI = {"arch": X86, "cpu": "x86-64-v4", "features": ["vnni"]}
# Target names a release may give in `runtime.target`, and the class their CPU is: the first match wins.
_TARGETS: tuple[tuple[str, dict[str, Any]], ...] = (
    (r"raspberry\s*pi\s*5|cortex-a76|rk3588|orange\s*pi\s*5", {"arch": ARM, "features": ["dotprod"]}),
    (r"raspberry\s*pi\s*4|cortex-a72|raspberry\s*pi\s*3|cortex-a53", {"arch": ARM}),
    (r"jetson\s*orin|graviton\s*3|graviton\s*4|apple\s*m[1-4]\b", {"arch": ARM, "features": ["dotprod", "i8mm"]}),
    (r"graviton\s*2|neoverse-n1", {"arch": ARM, "features": ["dotprod"]}),
    (r"ubuntu-\d\d\.\d\d-arm|cobalt\s*100|neoverse-n2", {"arch": ARM, "features": ["dotprod", "i8mm"]}),
    (r"ice\s*lake|sapphire\s*rapids|cascade\s*lake|zen\s*[45]", _V4_VNNI),
    (r"skylake-?(sp|x|server)", {"arch": X86, "cpu": "x86-64-v4"}),
    (r"haswell|broadwell|zen\s*[123]?\b|ubuntu-\d\d\.\d\d$", {"arch": X86, "cpu": "x86-64-v3"}),
)


def platform_of_target(target: str) -> dict[str, Any] | None:
    """The `runtime.platforms[]` entry a known device or runner name implies, or None."""
    text = target.strip().lower()
    for pattern, entry in _TARGETS:
        if re.search(pattern, text):
            return dict(entry)
    return None
