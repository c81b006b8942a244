"""An aarch64 userland for qemu-aarch64: Debian's arm64 Python with NumPy and onnxruntime's aarch64 wheels.

Built once into the user cache from Debian's packages (mmdebstrap, extract variant: no maintainer scripts run,
so no binfmt_misc is needed) and the package index's manylinux aarch64 wheels of the onnxruntime and NumPy
releases this checker runs, so that the figures differ by the CPU alone; reused by every later run, offline
included. qemu's `-L ROOT` serves the root's files before the host's: each CPU model has a view of the root
with that core's ARM /proc/cpuinfo, without which onnxruntime's CPU probe crashes on import under qemu 7.2,
and with another core's features it runs instructions the emulated CPU lacks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from checker.errors import Error
from checker.runtimes.envs import cache_root

SUITE = "bookworm"
PYTHON = "3.11"  # Debian 12's python3
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3", "libstdc++6", "libgomp1")
WHEEL_PLATFORMS = ("manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64")
READY = "checker-userland.json"  # written last: a root without it is unfinished and rebuilt
BUILD_TIMEOUT_S = 1800.0
# Each CPU model's /proc/cpuinfo as Linux shows it on such a core: onnxruntime's CPU probe reads it beside the
# auxiliary vector, and a feature claimed here that the emulated CPU lacks ends in an illegal instruction.
_BASE = "fp asimd evtstrm aes pmull sha1 sha2 crc32"
CPUINFO = {
    "cortex-a72": (f"{_BASE} cpuid", "0x0", "0xd08", "3"),
    "cortex-a76": (f"{_BASE} atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp", "0x4", "0xd0b", "1"),
    "max": (
        f"{_BASE} atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve "
        "asimdfhm dit uscat ilrcpc flagm ssbs sb dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 "
        "frint svei8mm svebf16 i8mm bf16 dgh bti",
        "0x0",
        "0xd4f",
        "0",
    ),
}
_CORE = """processor\t: {index}
BogoMIPS\t: 50.00
Features\t: {features}
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: {variant}
CPU part\t: {part}
CPU revision\t: {revision}
"""


def _core(model: str, index: int) -> str:
    features, variant, part, revision = CPUINFO[model]
    return _CORE.format(index=index, features=features, variant=variant, part=part, revision=revision)


def first_core(model: str) -> str:
    """The first core's entry of the /proc/cpuinfo this userland serves for `model`."""
    return _core(model, 0)


class UserlandError(Error):
    """The aarch64 userland is not there and cannot be built; the message says why."""


def folder(onnxruntime: str, numpy: str) -> Path:
    return cache_root().parent / "platforms" / f"aarch64-{SUITE}-cp{PYTHON.replace('.', '')}-ort{onnxruntime}-np{numpy}"


def python_of(root: Path) -> Path:
    return root / "usr" / "bin" / f"python{PYTHON}"


def ensure(onnxruntime: str, numpy: str, offline: bool, model: str) -> Path:
    """The root qemu-aarch64 -cpu MODEL is to run in (`-L`), the userland with these releases built first
    when it is not there yet. Each model has its own view of the one root: its /proc/cpuinfo, the rest linked."""
    built = _ensure_built(onnxruntime, numpy, offline)
    view = built / f"cpu-{model}"
    if not view.is_dir():
        raise UserlandError(f"the aarch64 userland {built} has no view for CPU model {model}")
    return view


def _views(building: Path) -> None:
    tree = building / "root"
    count = os.cpu_count() or 1
    for model in CPUINFO:
        view = building / f"cpu-{model}"
        (view / "proc").mkdir(parents=True)
        for entry in tree.iterdir():
            if entry.name != "proc":
                (view / entry.name).symlink_to(Path("..") / "root" / entry.name)  # relative: survives the rename
        text = "\n".join(_core(model, i) for i in range(count))
        (view / "proc" / "cpuinfo").write_text(text, encoding="utf-8")


def _ensure_built(onnxruntime: str, numpy: str, offline: bool) -> Path:
    root = folder(onnxruntime, numpy)
    if (root / READY).is_file():
        return root
    if offline:
        raise UserlandError(f"the aarch64 userland is not in the cache ({root}) and --offline allows no download")
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is None:
        raise UserlandError("building the aarch64 userland needs mmdebstrap (apt-get install mmdebstrap)")
    root.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        tree = building / "root"
        _run([mmdebstrap, "--mode=auto", "--variant=extract", "--architectures=arm64",
              f"--include={','.join(PACKAGES)}", SUITE, str(tree), MIRROR], "mmdebstrap")  # fmt: skip
        _wheels(tree, building / "wheels", onnxruntime, numpy)
        shutil.rmtree(building / "wheels", ignore_errors=True)
        _views(building)
        (building / READY).write_text(json.dumps({"onnxruntime": onnxruntime, "numpy": numpy, "suite": SUITE}) + "\n")
        try:
            building.rename(root)
        except OSError:
            if not (root / READY).is_file():  # not another run's finished copy: an unfinished leftover
                shutil.rmtree(root, ignore_errors=True)
                building.rename(root)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return root


def _wheels(tree: Path, wheels: Path, onnxruntime: str, numpy: str) -> None:
    """onnxruntime's and NumPy's aarch64 wheels (and their dependencies) into the root's dist-packages."""
    target = [arg for p in WHEEL_PLATFORMS for arg in ("--platform", p)]
    target += ["--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp"]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    wanted = [f"onnxruntime=={onnxruntime}", f"numpy=={numpy}"]
    _run([*pip, "download", "--quiet", *target, "-d", str(wheels), *wanted], "pip download")
    site = tree / "usr" / "lib" / "python3" / "dist-packages"
    found = sorted(str(w) for w in wheels.glob("*.whl"))
    _run([*pip, "install", "--quiet", "--no-index", "--no-deps", "--target", str(site), *target, *found], "pip install")


def _run(command: list[str], what: str) -> None:
    env = dict(os.environ, PIP_CONSTRAINT=os.devnull)  # the checker's own constraints do not bind the root's
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserlandError(f"building the aarch64 userland: {what} failed: {exc}") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).strip().splitlines() if ln.strip()]
        raise UserlandError(f"building the aarch64 userland: {what} failed: {' / '.join(lines[-3:])[-1500:]}")
