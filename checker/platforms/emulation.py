"""Whether this process runs on an emulated CPU, and how that shows: a figure timed here is then not the device's.

A system emulator names itself in the guest's /proc/cpuinfo. User-mode emulation (`qemu-x86_64 -cpu MODEL`,
`qemu-aarch64`) does not: the process asks the emulated CPU for its features (CPUID, the auxiliary vector)
while /proc/cpuinfo is still the host kernel's, so on x86 the two disagree. Under `qemu-aarch64` with the
checker's own userland, /proc/cpuinfo is the view that userland serves, which the checker wrote itself.
"""

from __future__ import annotations

import platform as _platform
from pathlib import Path

from checker.platforms.catalog import ARM, X86
from checker.platforms.features import machine_arch, numpy_features
from checker.platforms.userland import CPUINFO, first_core

# The kernel's flag names beside NumPy's names for the features whose absence changes the kernels chosen.
_X86_FLAGS = {"sse4_2": "SSE42", "avx": "AVX", "avx2": "AVX2", "fma": "FMA3", "avx512f": "AVX512F"}
CPUINFO_PATH = Path("/proc/cpuinfo")


def emulated() -> str | None:
    """Why this CPU is emulated, or None when nothing says so."""
    info = _read(CPUINFO_PATH)
    return None if info is None else judge(info, machine_arch(_platform.machine()), set(numpy_features()))


def judge(info: str, arch: str, features: set[str]) -> str | None:
    """Why a process that reads `info` as /proc/cpuinfo and sees `features` (NumPy's names) is emulated."""
    if "QEMU" in info:
        return "the CPU is emulated (QEMU names its CPU model)"
    if arch == X86:
        return _x86_mismatch(info, features)
    if arch == ARM and any(info.startswith(first_core(model)) for model in CPUINFO):
        return "the CPU is emulated (qemu-aarch64 in the checker's aarch64 userland)"
    return None


def _x86_mismatch(info: str, seen: set[str]) -> str | None:
    """The features the host kernel reports and the process's CPU does not, or the other way round."""
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), None)
    if flags is None:
        return None
    kernel = {ours for theirs, ours in _X86_FLAGS.items() if theirs in flags}
    process = seen & set(_X86_FLAGS.values())
    if kernel == process:
        return None
    lacking = sorted(kernel - process)
    extra = sorted(process - kernel)
    said = (
        f"the kernel reports {', '.join(lacking)} that the process's CPU lacks"
        if lacking
        else f"the process's CPU has {', '.join(extra)} that the kernel does not report"
    )
    return f"the CPU is emulated (user-mode: {said})"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
