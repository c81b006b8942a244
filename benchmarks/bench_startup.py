"""Start-up: `checker --version` and `checker --help` import neither onnx nor onnxruntime, and take at most half
the time a process takes to import onnxruntime and onnx.

    python benchmarks/bench_startup.py [--repeat 7]

Python's -X importtime lists every module a command imports; the check reads that list. The timings are whole
processes, the three commands interleaved, and the ratio is of medians.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from material import checker_command, measure, median

HEAVY = ("onnx", "onnxruntime")


def imported(args: list[str]) -> set[str]:
    cmd = [sys.executable, "-X", "importtime", *checker_command()[1:], *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    failed = False
    cmds = {
        "import onnxruntime, onnx": [sys.executable, "-c", "import onnxruntime, onnx"],
        "checker --version": [*checker_command(), "--version"],
        "checker --help": [*checker_command(), "--help"],
    }
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    for cmd in cmds.values():  # warm the page cache
        measure(cmd)
    for _ in range(args.repeat):  # interleaved, so a slow spell of the machine hits every command alike
        for name, cmd in cmds.items():
            walls[name].append(measure(cmd).wall_s)
    floor = median(walls["import onnxruntime, onnx"])
    print(f"import onnxruntime, onnx: {floor * 1000:6.0f} ms")
    for argv in (["--version"], ["--help"]):
        name = f"checker {argv[0]}"
        heavy = sorted(m for m in imported(argv) if m.split(".")[0] in HEAVY)
        wall = median(walls[name])
        ratio = wall / floor
        verdict = "OK" if not heavy and ratio <= 0.5 else "MISSED"
        failed |= verdict != "OK"
        imports = "imports neither onnx nor onnxruntime" if not heavy else f"imports {', '.join(heavy[:5])}"
        print(f"{name:<17}: {wall * 1000:6.0f} ms, {ratio:.2f}x the import (target <= 0.5x); {imports}: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
