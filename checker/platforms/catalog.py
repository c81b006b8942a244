"""The platforms a release may name, how a manifest declares them, and which target names mean which class.

A CPU class is an architecture and the instruction-set features that change onnxruntime's kernels: the x86-64
micro-architecture level (v2: SSE4.2; v3: AVX2 and FMA; v4: AVX-512) with or without VNNI (the int8 dot
product that keeps U8S8 sums from saturating), and aarch64 with or without the dot-product and i8mm
instructions. Its name is the level and its features joined by '-': `x86-64-v3`, `x86-64-v4-vnni`,
`aarch64-dotprod`.

An engine is where an application runs the graph other than Python's onnxruntime: onnxruntime-web's WASM and
WebGPU backends in a browser, onnxruntime-node, or a device that sends its outputs back (`device`, judged from
a folder: `checker verify --device-outputs DIR`). Its name is the engine's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checker.manifest import views
from checker.manifest.model.build import build
from checker.manifest.model.runtime import Platform as Declared
from checker.manifest.model.runtime import Runtime as DeclaredRuntime

X86 = "x86_64"
ARM = "aarch64"
TARGET = "target"  # --platform target: every platform the manifest declares (the default)
NONE = "none"  # --platform none: no platform judged (each declared one shows as not run)
BROWSER_WASM = "browser-wasm"  # onnxruntime-web's WASM backend (threads and SIMD) in headless Chromium
BROWSER_WEBGPU = "browser-webgpu"  # onnxruntime-web's WebGPU backend there (SwiftShader without a GPU)
NODE = "node"  # onnxruntime-node's CPU backend
DEVICE = "device"  # a device's own runner: its outputs judged from a folder (--device-outputs)
ENGINES = (BROWSER_WASM, BROWSER_WEBGPU, NODE, DEVICE)
# What each engine runs on, in the report's `arch`: the browser's WASM machine, or this machine's own CPU.
ENGINE_ARCH = {BROWSER_WASM: "wasm32", BROWSER_WEBGPU: "wasm32", NODE: "native", DEVICE: "device"}


@dataclass(frozen=True)
class CpuClass:
    """One CPU class the checker knows, and the qemu CPU model that emulates it where it does not run natively."""

    arch: str
    level: str | None  # the x86-64 level; None on aarch64
    features: tuple[str, ...]  # sorted
    qemu: str = ""  # qemu's CPU model of this class (an aarch64 one needs its /proc/cpuinfo in userland.CPUINFO)
    unemulated: str = ""  # why no qemu model emulates it, when none does

    @property
    def name(self) -> str:
        return class_name(self.arch, self.level, self.features)


_NO_TCG = "qemu's TCG emulates neither AVX-512 nor AVX-VNNI: run it on a machine of that class (a matrix leg)"
_NO_I8MM = "qemu has no CPU model with i8mm and without the dot product"
# Every class, one entry each: the levels, features, --platform names and emulation below come from here, and
# tests/platforms/test_platform_registry.py holds NumPy's feature names, the aarch64 userland's /proc/cpuinfo,
# the target names, the schema's enums and docs/manifest.md to it.
CLASSES = (
    CpuClass(X86, "x86-64-v2", (), qemu="Nehalem-v2"),
    CpuClass(X86, "x86-64-v2", ("vnni",), unemulated=_NO_TCG),
    CpuClass(X86, "x86-64-v3", (), qemu="Haswell-v4"),
    CpuClass(X86, "x86-64-v3", ("vnni",), unemulated=_NO_TCG),
    CpuClass(X86, "x86-64-v4", (), unemulated=_NO_TCG),
    CpuClass(X86, "x86-64-v4", ("vnni",), unemulated=_NO_TCG),
    CpuClass(ARM, None, (), qemu="cortex-a72"),
    CpuClass(ARM, None, ("dotprod",), qemu="cortex-a76"),
    CpuClass(ARM, None, ("i8mm",), unemulated=_NO_I8MM),
    CpuClass(ARM, None, ("dotprod", "i8mm"), qemu="max"),
)
X86_LEVELS = tuple(dict.fromkeys(c.level for c in CLASSES if c.level))  # lowest first
FEATURES = {arch: tuple(dict.fromkeys(f for c in CLASSES if c.arch == arch for f in c.features)) for arch in (X86, ARM)}


def cpu_class(name: str) -> CpuClass | None:
    """The registry's entry for a class name (`x86-64-v3`), or None."""
    return next((c for c in CLASSES if c.name == name), None)


@dataclass(frozen=True)
class Platform:
    """One CPU class or engine, under the name the manifest or the command line gives it."""

    name: str
    arch: str
    level: str | None  # the x86-64 level; None on aarch64 and for an engine
    features: tuple[str, ...]  # sorted, from FEATURES[arch]
    engine: str | None = None  # one of ENGINES; None for a CPU class

    @property
    def cpu_class(self) -> str:
        """The class's name (`x86-64-v3`), or the engine's (`browser-webgpu`)."""
        return self.engine or class_name(self.arch, self.level, self.features)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arch": self.arch, "class": self.cpu_class}
        if self.engine is not None:
            out["engine"] = self.engine
        if self.level is not None:
            out["level"] = self.level
        out["features"] = list(self.features)
        return out


def engine_platform(engine: str, name: str | None = None) -> Platform:
    return Platform(name or engine, ENGINE_ARCH[engine], None, (), engine)


def class_name(arch: str, level: str | None, features: Sequence[str]) -> str:
    return "-".join([level or arch, *sorted(features)])


def known_classes() -> list[Platform]:
    """Every class and engine a --platform NAME may name without a manifest declaring it (a device is judged
    from its folder, --device-outputs, and named by the manifest or the folder)."""
    out = [Platform(c.name, c.arch, c.level, c.features) for c in CLASSES]
    out.extend(engine_platform(engine) for engine in ENGINES if engine != DEVICE)
    return out


def from_manifest(entry: Declared) -> Platform:
    """A `runtime.platforms[]` entry as a Platform."""
    if entry.engine is not None:
        return engine_platform(entry.engine, entry.name)
    arch = str(entry.arch)  # the schema asks for arch or engine
    level = entry.cpu if arch == X86 else None
    features = tuple(sorted(entry.features)) if entry.features else ()
    name = entry.name or class_name(arch, level, features)
    return Platform(name, arch, level, features)


def declared(runtime: DeclaredRuntime | None) -> list[Platform]:
    """`runtime.platforms`, each as a Platform."""
    return [from_manifest(entry) for entry in views.platforms(runtime)]


def declared_data(runtime: object) -> list[Platform]:
    """`runtime.platforms` of a manifest as stored data (a stored verdict's bundle), each as a Platform."""
    entries = runtime.get("platforms") if isinstance(runtime, Mapping) else None
    if not isinstance(entries, list):
        return []
    return [from_manifest(build(Declared, entry)) for entry in entries if isinstance(entry, Mapping)]


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
