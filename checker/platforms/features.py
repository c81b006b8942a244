"""CPU features as NumPy's runtime dispatch sees them (CPUID on x86, the auxiliary vector on aarch64), and
the class they make. Under user-mode emulation these are the emulated CPU's, which is what onnxruntime's own
kernel dispatch reads too."""

from __future__ import annotations

import contextlib
import platform as _platform
from collections.abc import Iterable
from typing import Any

from checker.platforms.catalog import ARM, FEATURES, X86, X86_LEVELS, class_name

# NumPy's names for each x86-64 level and each feature of the classes (catalog.CLASSES; the registry's test holds
# the two together).
LEVEL_NAMES = {"x86-64-v2": "X86_V2", "x86-64-v3": "X86_V3", "x86-64-v4": "X86_V4"}
FEATURE_NAMES = {"vnni": ("AVX512VNNI", "AVX_VNNI", "AVXVNNI"), "dotprod": ("ASIMDDP",), "i8mm": ("I8MM",)}


def numpy_features() -> list[str]:
    """This process's CPU features, by NumPy's names (the worker reports its own the same way)."""
    import numpy as np  # not for `checker --help`, which reaches this module through the platforms' names

    core = getattr(np, "_core", None) or np.core  # NumPy 1 names it core
    found = getattr(core._multiarray_umath, "__cpu_features__", {})
    names = {name for name, present in found.items() if present}
    if machine_arch(_platform.machine()) == ARM and _hwcap2() & _HWCAP2_I8MM:
        names.add("I8MM")  # NumPy names no I8MM; the worker reads it the same way
    return sorted(names)


_HWCAP2_I8MM = 1 << 13
_AT_HWCAP2 = 26


def _hwcap2() -> int:
    import ctypes  # on aarch64 alone

    try:
        return int(ctypes.CDLL(None).getauxval(_AT_HWCAP2))
    except (OSError, AttributeError):  # no getauxval in this C library
        return 0


def machine_arch(machine: str) -> str:
    text = machine.lower()
    return ARM if text in ("aarch64", "arm64") else X86 if text in ("x86_64", "amd64") else text


def class_of(machine: str, features: Iterable[str]) -> str:
    """The CPU class a machine and its features make: `x86-64-v3`, `aarch64-dotprod`, ..."""
    have = set(features)
    arch = machine_arch(machine)
    if arch not in (X86, ARM):
        return arch
    extra = [f for f in FEATURES[arch] if have & set(FEATURE_NAMES.get(f, ()))]
    if arch == X86:
        level = next((lv for lv in reversed(X86_LEVELS) if LEVEL_NAMES.get(lv) in have), "x86-64")
        return class_name(X86, level, extra)
    return class_name(ARM, None, extra)


def this_machine() -> tuple[str, list[str]]:
    """(the class of the machine running the checker, its features)."""
    features = numpy_features()
    return class_of(_platform.machine(), features), features


def produced_on() -> dict[str, Any]:
    """Where a reference output is being stored: this machine's architecture, CPU class and features, and the
    onnxruntime and NumPy installed (read from their metadata: onnxruntime is not imported for it)."""
    # Only when a case is stored; NumPy as in numpy_features
    from importlib.metadata import PackageNotFoundError, version

    import numpy as np

    cpu_class, features = this_machine()
    out: dict[str, Any] = {"arch": _platform.machine(), "cpu_class": cpu_class, "cpu_features": features}
    with contextlib.suppress(PackageNotFoundError):
        out["onnxruntime"] = version("onnxruntime")
    out["numpy"] = np.__version__
    return out
