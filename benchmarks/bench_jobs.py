"""Many bundles: `checker verify --jobs 2` (default: one worker per core) against `--jobs 1` over 20 bundles.

    python benchmarks/bench_jobs.py [--bundles 20] [--cases 64] [--repeat 3] [--jobs 2] [--threads 1]

The bundles are copies of the small classifier's (material.small_model) with `--cases` cases each. With
`--threads 0` the manifests set no thread count, so the worker pool gives each session its share of the cores;
the default, one intra-op thread in every manifest, keeps onnxruntime's spinning threads from skewing the
timings on a machine shared with other work. Target: <= 0.7x the `--jobs 1` wall time on 2 cores. The two
commands also print the same report, which the script checks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from material import Measured, checker_command, measure, median, small_model, write_bundle


def run(cmds: dict[str, list[str]], repeat: int) -> dict[str, list[Measured]]:
    results: dict[str, list[Measured]] = {name: [] for name in cmds}
    for cmd in cmds.values():  # once each to warm the page cache
        measure(cmd)
    for _ in range(repeat):  # interleaved, so a slow spell of the machine hits both alike
        for name, cmd in cmds.items():
            results[name].append(measure(cmd))
    return results


def same_report(a: list[str], b: list[str]) -> bool:
    outs = [json.loads(subprocess.run(cmd, capture_output=True, text=True, check=False).stdout) for cmd in (a, b)]
    for out in outs:
        out.pop("created_at", None)  # the one field that tells time
    return outs[0] == outs[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundles", type=int, default=20)
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime's intra-op threads (0: the pool's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        first = write_bundle(Path(tmp) / "b00", small_model(), args.cases, 32, args.threads).root
        roots = [first] + [Path(tmp) / f"b{i:02d}" for i in range(1, args.bundles)]
        for root in roots[1:]:
            shutil.copytree(first, root)
        base = [*checker_command(), "verify", *map(str, roots), "--format", "json"]
        cmds = {"jobs 1": [*base, "--jobs", "1"], f"jobs {args.jobs}": [*base, "--jobs", str(args.jobs)]}
        threads = args.threads or "the pool's"
        print(f"{args.bundles} bundles of the small classifier, {args.cases} cases each, intra-op threads: {threads}")
        results = run(cmds, args.repeat)
        walls = {name: median([m.wall_s for m in runs]) for name, runs in results.items()}
        for name, runs in results.items():
            rss = max(m.peak_rss_mib for m in runs)
            print(
                f"{name:>8}: wall {walls[name]:6.2f} s (runs {', '.join(f'{m.wall_s:.2f}' for m in runs)}); "
                f"cpu {median([m.cpu_s for m in runs]):6.2f} s; peak RSS {rss:5.0f} MiB"
            )
        ratio = walls[f"jobs {args.jobs}"] / walls["jobs 1"]
        verdict = "OK" if ratio <= 0.7 else "MISSED"
        print(f"jobs {args.jobs} / jobs 1: median wall {ratio:.3f} (target <= 0.7) {verdict}")
        print(f"same report: {same_report(cmds['jobs 1'], cmds[f'jobs {args.jobs}'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
