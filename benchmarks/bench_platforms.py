"""`checker verify --platform`: what each platform costs against the checker's native run alone.

    python benchmarks/bench_platforms.py [--platform x86-64-v3 --platform aarch64-dotprod] [--repeat 3]
                                         [--bundle examples/mobilenet-tiny]

Each platform is timed alone (`checker verify BUNDLE --platform NAME`) against `checker verify BUNDLE`,
interleaved so a busy moment of the machine hits both alike; the figure is the wall time it adds, its worker's
start under emulation included (importing onnxruntime under qemu dominates a small bundle). The aarch64
userland is built first, once, into the user cache (or CHECKER_CACHE_DIR), and that build is timed apart.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from material import checker_command, measure, median

ROOT = Path(__file__).resolve().parent.parent


def _figure(report: Path, platform: str) -> str:
    data = json.loads(report.read_text())
    for bundle in data["bundles"]:
        for runtime in bundle.get("runtimes") or []:
            if runtime["runtime"].startswith(f"platform {platform}"):
                figures = [f"{r['check']} {r['measured']:.4g}" for c in runtime["comparisons"] for r in c["rules"]
                           if c["graph"] != "baseline" and isinstance(r["measured"], (int, float))]  # fmt: skip
                return f"{runtime['status']}, {runtime['platform']['how']}: {', '.join(figures)}"
        for skipped in bundle.get("not_run") or []:
            if skipped["check"].startswith(f"platform {platform}"):
                return f"not run: {skipped['reason']}"
    return "no set in the report"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--platform", action="append", default=[], help="repeatable (default: x86-64-v3, aarch64-dotprod)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bundle", type=Path, default=ROOT / "examples" / "mobilenet-tiny")
    args = parser.parse_args()
    platforms = args.platform or ["x86-64-v3", "aarch64-dotprod"]
    base = [*checker_command(), "verify", str(args.bundle), "--no-progress"]
    with tempfile.TemporaryDirectory(prefix="bench-platforms-") as tmp:
        report = Path(tmp) / "r.json"
        for platform in platforms:  # the first run builds what the platform needs (the aarch64 userland)
            first = measure([*base, "--platform", platform, "--format", "json", "-o", str(report)])
            print(f"{platform}: first run {first.wall_s:.2f} s ({_figure(report, platform)})")
        walls: dict[str, list[float]] = {"native": [], **{p: [] for p in platforms}}
        for _ in range(args.repeat):
            walls["native"].append(measure(base).wall_s)
            for platform in platforms:
                walls[platform].append(measure([*base, "--platform", platform]).wall_s)
    native = median(walls["native"])
    print(f"checker verify, native only:        {native:.2f} s")
    for platform in platforms:
        wall = median(walls[platform])
        print(f"  --platform {platform:<22} {wall:.2f} s: adds {wall - native:.2f} s ({wall / native:.1f}x)")


if __name__ == "__main__":
    main()
