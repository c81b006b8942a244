"""`checker verify --platform`: what each platform costs against the checker's native run alone.

    python benchmarks/bench_platforms.py [--platform node --platform browser-wasm ...] [--repeat 3]
                                         [--bundle examples/mobilenet-tiny] [--megabytes] [--cases 8]

Each platform is timed alone (`checker verify BUNDLE --platform NAME`) against `checker verify BUNDLE`,
interleaved so a busy moment of the machine hits both alike; the figure is the wall time it adds: its worker's
start (importing onnxruntime under qemu, starting Chromium and loading onnxruntime-web, starting Node.js) and its
inference. Run on the example and, with --megabytes, on a ~7 MB convolutional classifier (material.conv_model) of
64 x 64 inputs as well. The first run of a platform builds what it needs (the aarch64 userland; the npm packages
into the user cache) and is timed apart. Defaults: the engines (node, browser-wasm, browser-webgpu) and the two
emulated CPU classes (x86-64-v3, aarch64-dotprod).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from material import checker_command, conv_model, measure, median, write_bundle

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["node", "browser-wasm", "browser-webgpu", "x86-64-v3", "aarch64-dotprod"]


def _figure(report: Path, platform: str) -> str:
    data = json.loads(report.read_text())
    for bundle in data["bundles"]:
        for runtime in bundle.get("runtimes") or []:
            if runtime["runtime"].startswith(f"platform {platform}"):
                figures = [f"{c['graph']} {r['check']} {r['measured']:.4g}" for c in runtime["comparisons"]
                           for r in c["rules"] if isinstance(r["measured"], (int, float))]  # fmt: skip
                return f"{runtime['status']}, {runtime['platform']['how']}: {', '.join(figures)}"
        for skipped in bundle.get("not_run") or []:
            if skipped["check"].startswith(f"platform {platform}"):
                return f"not run: {skipped['reason']}"
    return "no set in the report"


def bench(bundle: Path, platforms: list[str], repeat: int, tmp: Path) -> None:
    base = [*checker_command(), "verify", str(bundle), "--no-progress"]
    report = tmp / "r.json"
    print(f"== {bundle}")
    for platform in platforms:  # the first run builds what the platform needs
        first = measure([*base, "--platform", platform, "--format", "json", "-o", str(report)])
        print(f"{platform}: first run {first.wall_s:.2f} s ({_figure(report, platform)})")
    walls: dict[str, list[float]] = {"native": [], **{p: [] for p in platforms}}
    cpus: dict[str, list[float]] = {"native": [], **{p: [] for p in platforms}}
    for _ in range(repeat):
        done = measure(base)
        walls["native"].append(done.wall_s)
        cpus["native"].append(done.cpu_s)
        for platform in platforms:
            done = measure([*base, "--platform", platform])
            walls[platform].append(done.wall_s)
            cpus[platform].append(done.cpu_s)
    native = median(walls["native"])
    print(f"checker verify, native only:        {native:.2f} s (CPU {median(cpus['native']):.2f} s)")
    for platform in platforms:
        wall = median(walls[platform])
        print(f"  --platform {platform:<22} {wall:.2f} s: adds {wall - native:.2f} s ({wall / native:.1f}x; "
              f"CPU with its children {median(cpus[platform]):.2f} s)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", action="append", default=[], help=f"repeatable (default: {', '.join(DEFAULT)})")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bundle", type=Path, default=ROOT / "examples" / "mobilenet-tiny")
    parser.add_argument("--megabytes", action="store_true", help="also a ~7 MB convolutional classifier")
    parser.add_argument("--cases", type=int, default=8, help="cases of the megabytes bundle (default 8)")
    args = parser.parse_args()
    platforms = args.platform or DEFAULT
    with tempfile.TemporaryDirectory(prefix="bench-platforms-") as tmp:
        bench(args.bundle, platforms, args.repeat, Path(tmp))
        if args.megabytes:
            built = write_bundle(Path(tmp) / "conv", conv_model(), args.cases, 64, threads=1)
            bench(built.root, platforms, args.repeat, Path(tmp))


if __name__ == "__main__":
    main()
