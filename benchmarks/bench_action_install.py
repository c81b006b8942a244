"""The action's install step, first run and cached run, from a scratch RUNNER_TEMP.

    python benchmarks/bench_action_install.py [--lock action/requirements.lock]

Target: the second run (the environment restored by actions/cache, here simply left in place) takes
under 5 s. The first run downloads and installs every locked package (pip's own cache may help).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / "checker" / "github" / "install.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lock", type=Path, default=ROOT / "action" / "requirements.lock")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        temp = Path(tmp)
        env = {**os.environ, "RUNNER_TEMP": str(temp), "GITHUB_WORKSPACE": str(temp)}
        argv = [sys.executable, "-I", str(INSTALL), "install", "--project", str(ROOT)]
        argv += ["--venv", str(temp / "onnx-release-checker"), "--lock", str(args.lock.resolve())]
        for name in ("first run", "cached run"):
            started = time.monotonic()
            subprocess.run(argv, cwd=temp, env=env, check=True, stdout=subprocess.DEVNULL)
            print(f"{name}: {time.monotonic() - started:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
