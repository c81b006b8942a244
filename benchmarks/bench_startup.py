"""Start-up: `checker --version` and `checker --help` import neither onnx nor onnxruntime, and how long they take.

    python benchmarks/bench_startup.py [--repeat 5]

Python's -X importtime lists every module a command imports; the check reads that list.
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
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    failed = False
    for argv in (["--version"], ["--help"]):
        heavy = sorted(m for m in imported(argv) if m.split(".")[0] in HEAVY)
        wall = median([measure([*checker_command(), *argv]).wall_s for _ in range(args.repeat)])
        verdict = "OK" if not heavy else f"MISSED: imports {', '.join(heavy[:5])}"
        failed |= bool(heavy)
        print(f"checker {argv[0]:<9}: {wall * 1000:6.0f} ms; onnx/onnxruntime not imported: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
