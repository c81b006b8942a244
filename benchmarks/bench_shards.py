"""`checker verify --shard K/N` on a 2-core machine: N shard jobs at once, then `report merge`, against one job.

    python benchmarks/bench_shards.py [--shards 4] [--cases 32] [--size 320] [--repeat 3] [--model PATH]

On GitHub Actions each shard is a job on a machine of its own; here all N share this machine, so the gain is at
most its core count. Each process gets one onnxruntime thread (runtime.session_options), so the N shards use
the cores the one job leaves idle; the one job is measured with one thread and with onnxruntime's default.
The shards' wall time runs until the last one ends, plus the merge.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from material import checker_command, measure, median, real_model, write_bundle


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _shards(bundle: Path, count: int, folder: Path) -> tuple[float, float]:
    """Wall time until the last shard and the merge are done, and the CPU time they used together."""
    start, cpu = time.perf_counter(), _children_cpu()
    procs = [
        subprocess.Popen(
            [*checker_command(), "verify", str(bundle), "--no-progress", "--shard", f"{k}/{count}",
             "--format", "json", "-o", str(folder / f"shard-{k}.json")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for k in range(1, count + 1)
    ]  # fmt: skip
    codes = [p.wait() for p in procs]
    merged = subprocess.run(
        [*checker_command(), "report", "merge", *(str(folder / f"shard-{k}.json") for k in range(1, count + 1)),
         "--format", "json", "-o", str(folder / "merged.json")],
        stdout=subprocess.DEVNULL,
        check=False,
    )  # fmt: skip
    if any(c not in (0, 1) for c in codes) or merged.returncode not in (0, 1):
        raise SystemExit(f"a shard or the merge failed: {codes}, {merged.returncode}")
    return time.perf_counter() - start, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--cases", type=int, default=32)
    parser.add_argument("--size", type=int, default=320)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", type=Path, help="a graph with one float input [N, 3, H, W]")
    args = parser.parse_args()
    model = args.model or real_model()
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        one = write_bundle(Path(tmp) / "one-thread", model, args.cases, args.size, threads=1).root
        default = write_bundle(Path(tmp) / "default-threads", model, args.cases, args.size).root
        cmd = [*checker_command(), "verify", "--no-progress"]
        measure([*cmd, str(one)])  # warm the page cache
        runs: dict[str, list[tuple[float, float]]] = {
            "one job, 1 thread": [],
            "one job, default threads": [],
            "shards": [],
        }
        for _ in range(args.repeat):
            for name, root in (("one job, 1 thread", one), ("one job, default threads", default)):
                got = measure([*cmd, str(root)])
                runs[name].append((got.wall_s, got.cpu_s))
            runs["shards"].append(_shards(one, args.shards, Path(tmp)))
    wall = {k: median([w for w, _ in v]) for k, v in runs.items()}
    cpu = {k: median([c for _, c in v]) for k, v in runs.items()}
    print(f"{args.cases} cases of [1, 3, {args.size}, {args.size}] on {os.cpu_count()} cores, median of {args.repeat}:")
    for name in runs:
        print(f"  {name:26} {wall[name]:7.2f} s wall  {cpu[name]:7.2f} s CPU")
    label = f"{args.shards} shards + merge"
    print(
        f"  {label}: {wall['one job, 1 thread'] / wall['shards']:.2f}x the speed of one job with 1 thread, "
        f"{wall['one job, default threads'] / wall['shards']:.2f}x with the default threads (wall)"
    )
    print(f"  fixed cost per shard (CPU): {(cpu['shards'] - cpu['one job, 1 thread']) / max(args.shards - 1, 1):.2f} s")


if __name__ == "__main__":
    main()
