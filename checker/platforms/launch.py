"""How a platform's worker is started here: natively when this machine is of its class, else under qemu's
user-mode emulation of a CPU model of that class, or not at all (the reason says why).

aarch64 classes run in an aarch64 userland (platforms.userland) under `qemu-aarch64 -cpu MODEL -L ROOT`: the
interpreter is named directly, since without binfmt_misc nothing inside may exec an aarch64 binary itself.

x86 classes run the checker's own interpreter and environment under `qemu-x86_64 -cpu MODEL`: the same
NumPy and onnxruntime, only the CPU they find differs. qemu 7.2's TCG emulates neither AVX-512 nor AVX-VNNI
(a `Skylake-Server` model silently runs AVX2 kernels), so those classes are not emulated: the worker's own
view of its CPU is checked against the class before anything is judged (stage checks/platforms.py).
"""

from __future__ import annotations

import platform as _platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from checker.platforms.catalog import ARM, X86, Platform, cpu_class
from checker.platforms.features import machine_arch
from checker.platforms.userland import python_of


@dataclass(frozen=True)
class Plan:
    """A worker command for one platform: the launcher in front of the interpreter, and how it was chosen."""

    platform: Platform
    python: Path
    launcher: tuple[str, ...]  # empty when native
    how: str  # "native" or "qemu-x86_64 -cpu Haswell-v4"
    userland: bool = False  # an emulated aarch64: python and `-L ROOT` come from the aarch64 userland


def in_userland(chosen: Plan, root: Path) -> Plan:
    """An aarch64 plan with its interpreter and qemu's `-L` in the built userland (platforms.userland)."""
    return Plan(chosen.platform, python_of(root), (*chosen.launcher, "-L", str(root)), chosen.how, userland=False)


def plan(platform: Platform, here: str) -> Plan | str:
    """The Plan for `platform` on a machine of class `here`, or why it cannot run here."""
    python = Path(sys.executable)
    if platform.cpu_class == here:
        return Plan(platform, python, (), "native")
    known = cpu_class(platform.cpu_class)
    if known is None or platform.arch not in (X86, ARM):
        return f"architecture {platform.arch} is not one this checker can run"
    if not known.qemu:
        return f"{platform.cpu_class} cannot be emulated: {known.unemulated}"
    if platform.arch == ARM:
        return _arm(platform, known.qemu)
    if machine_arch(_platform.machine()) != X86:
        return f"{platform.cpu_class} is emulated only on an x86-64 machine (its environment runs under qemu)"
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        return "qemu-x86_64 is not installed (Debian and Ubuntu: apt-get install qemu-user)"
    return Plan(platform, python, (qemu, "-cpu", known.qemu), f"qemu-x86_64 -cpu {known.qemu}")


def _arm(platform: Platform, model: str) -> Plan | str:
    qemu = shutil.which("qemu-aarch64")
    if qemu is None:
        return "qemu-aarch64 is not installed (Debian and Ubuntu: apt-get install qemu-user)"
    return Plan(platform, Path(), (qemu, "-cpu", model), f"qemu-aarch64 -cpu {model}", userland=True)
