"""An emulated CPU is told apart from a real one, so that a time measured on it is not given as the device's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from platformkit import QEMU

from checker.platforms.catalog import ARM, X86
from checker.platforms.emulation import judge
from checker.platforms.userland import CPUINFO, first_core

HOST_FLAGS = Path("/proc/cpuinfo").read_text(errors="replace") if Path("/proc/cpuinfo").exists() else ""
X86_INFO = "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse4_2 avx avx2 fma avx512f\n"


@pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 is not installed (apt-get install qemu-user)")
@pytest.mark.skipif(" avx2" not in HOST_FLAGS, reason="the host must have AVX2 for an AVX-only CPU to differ")
def test_a_process_under_qemu_user_knows_its_cpu_is_emulated() -> None:
    probe = "from checker.platforms.emulation import emulated; print(emulated())"
    done = subprocess.run(
        [str(QEMU), "-cpu", "SandyBridge", sys.executable, "-c", probe], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout.strip().splitlines()[-1]
    assert said.startswith("the CPU is emulated (user-mode:") and "AVX2" in said


def test_the_kernels_flags_and_the_processs_features_agreeing_is_no_emulation() -> None:
    assert judge(X86_INFO, X86, {"SSE42", "AVX", "AVX2", "FMA3", "AVX512F", "AVX512VNNI"}) is None


def test_features_the_kernel_reports_and_the_cpu_lacks_are_named() -> None:
    said = judge(X86_INFO, X86, {"SSE42", "AVX", "AVX2", "FMA3"})
    assert said == "the CPU is emulated (user-mode: the kernel reports AVX512F that the process's CPU lacks)"
    more = judge(X86_INFO.replace(" avx512f", ""), X86, {"SSE42", "AVX", "AVX2", "FMA3", "AVX512F"})
    assert "has AVX512F that the kernel does not report" in str(more)


def test_a_system_emulator_names_itself() -> None:
    assert judge("model name\t: QEMU Virtual CPU version 2.5+\nflags\t: sse4_2\n", X86, {"SSE42"}) is not None


@pytest.mark.parametrize("model", sorted(CPUINFO))
def test_the_aarch64_userlands_own_cpuinfo_is_recognised(model: str) -> None:
    view = "\n".join(first_core(model).replace("processor\t: 0", f"processor\t: {i}") for i in range(2))
    assert judge(view, ARM, {"ASIMD"}) == "the CPU is emulated (qemu-aarch64 in the checker's aarch64 userland)"


def test_a_real_raspberry_pi_is_not_called_emulated() -> None:
    pi5 = (
        "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp "
        "asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
        "CPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 1\n"
    )
    assert judge(pi5, ARM, {"ASIMD", "ASIMDDP"}) is None
