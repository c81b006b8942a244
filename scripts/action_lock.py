"""The action's lock: action/requirements.lock, every package it installs pinned with hashes.

    python scripts/action_lock.py compile   # write the lock from action/requirements.in (uv, from PyPI)
    python scripts/action_lock.py check     # fail when the lock is stale: it no longer answers the .in
    python scripts/action_lock.py resolve   # prove every runner and Python resolves from the lock

`uv pip compile --universal` makes one lock for every platform and Python (a package that differs by
platform or Python gets a marker). `check` compiles again with the lock as the starting point (uv keeps
every pin that still fits), so it changes only when action/requirements.in did. `resolve` resolves the
lock, wheels only, for each runner's platform tag and each supported Python, as pip would on it.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "action" / "requirements.in"
LOCK = ROOT / "action" / "requirements.lock"
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
# runner label -> (uv's --python-platform, the macOS version its wheels may need at most)
RUNNERS = {
    "ubuntu-latest": ("x86_64-manylinux_2_39", None),
    "ubuntu-24.04-arm": ("aarch64-manylinux_2_39", None),
    "windows-latest": ("x86_64-pc-windows-msvc", None),
    "macos-latest": ("aarch64-apple-darwin", "15.0"),
    "macos-13": ("x86_64-apple-darwin", "13.0"),
}
# Combinations that do not resolve, and why: documented in docs/action.md, checked to still fail.
EXCLUDED = {("macos-13", "3.14"): "onnxruntime has no macOS x86_64 wheel for Python 3.14"}


def uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def compile_to(target: Path) -> None:
    command = [
        *uv(), "pip", "compile", str(SOURCE.relative_to(ROOT)), "--universal", "--generate-hashes",
        "--python-version", PYTHONS[0], "--quiet", "--output-file", str(target),
        "--custom-compile-command", "python scripts/action_lock.py compile",
    ]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=True)


def check() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "requirements.lock"
        shutil.copyfile(LOCK, fresh)  # the pins to keep where they still fit
        compile_to(fresh)
        old, new = LOCK.read_text(encoding="utf-8"), fresh.read_text(encoding="utf-8")
    if old == new:
        print(f"{LOCK.relative_to(ROOT)} is up to date with {SOURCE.relative_to(ROOT)}")
        return 0
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "lock", "fresh"))
    print(f"{LOCK.relative_to(ROOT)} is stale: run python scripts/action_lock.py compile")
    return 1


def resolves(runner: str, python: str) -> tuple[bool, str]:
    platform, macos = RUNNERS[runner]
    command = [
        *uv(), "pip", "compile", str(LOCK), "--python-platform", platform, "--python-version", python,
        "--only-binary", ":all:", "--no-deps", "--quiet", "--output-file", os.devnull,
    ]  # fmt: skip
    env = {**os.environ, **({"MACOSX_DEPLOYMENT_TARGET": macos} if macos else {})}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    return done.returncode == 0, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def resolve() -> int:
    bad = 0
    for runner in RUNNERS:
        for python in PYTHONS:
            ok, why = resolves(runner, python)
            excluded = EXCLUDED.get((runner, python))
            if ok and excluded:
                print(f"{runner} Python {python}: resolves now; drop it from EXCLUDED and the docs")
                bad += 1
            elif ok:
                print(f"{runner} Python {python}: resolves")
            elif excluded:
                print(f"{runner} Python {python}: excluded ({excluded})")
            else:
                print(f"{runner} Python {python}: DOES NOT RESOLVE: {why}")
                bad += 1
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description="The action's hashed lock.")
    parser.add_argument("command", choices=("compile", "check", "resolve"))
    args = parser.parse_args()
    if args.command == "compile":
        compile_to(LOCK)
        return 0
    return check() if args.command == "check" else resolve()


if __name__ == "__main__":
    raise SystemExit(main())
