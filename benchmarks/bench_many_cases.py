"""`checker verify` on a release of many cases (10,000 by default): wall time, peak RSS, and that it passes with
the file-descriptor limit at 1024 (every case's tensors are opened; none may stay open). The bundle is
`bench_cases.py`'s."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_cases import write_bundle  # the same tiny graph and cases as the per-case slope

FD_LIMIT = 1024


def limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_bundle(Path(tmp) / "bundle", args.cases) / "bundle.yaml"
        print(f"{args.cases} cases; manifest {manifest.stat().st_size} bytes")
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "checker", "verify", str(manifest.parent), "--format", "json"],
            capture_output=True,
            text=True,
            preexec_fn=limit_fds,
            check=False,
        )
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        status = json.loads(done.stdout)["status"] if done.stdout.startswith("{") else done.stderr[-2000:]
        print(
            f"exit {done.returncode}, status {status}; wall {wall:.1f} s; peak RSS {peak:.0f} MiB "
            f"(file descriptors limited to {FD_LIMIT})"
        )
        return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
