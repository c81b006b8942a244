"""`checker verify` as a whole process against the floor (floor.py) and against polygraphy, on a real model.

    python benchmarks/bench_verify.py [--cases 64] [--size 640] [--repeat 3] [--threads N] [--model PATH]
                                      [--no-polygraphy]

Targets: checker <= 1.15x the floor's wall time; checker <= 0.7x `polygraphy run --onnxrt --load-inputs
--load-outputs` (polygraphy: `pip install polygraphy`; it is no test dependency). Prints medians and ratios.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from material import Bundle, Measured, checker_command, measure, median, real_model, write_bundle

HERE = Path(__file__).resolve().parent


def polygraphy_material(bundle: Bundle, folder: Path) -> list[str] | None:
    """polygraphy's own JSON for the same inputs and expected outputs, and its command; None without it."""
    try:
        from polygraphy.comparator import IterationResult, RunResults
        from polygraphy.json import save_json
    except ImportError:
        return None
    feeds, results = [], []
    for name in bundle.cases:
        case = bundle.root / "comparison" / name
        feeds.append({bundle.input_name: np.load(case / "input.npy")})
        results.append(IterationResult({bundle.output_name: np.load(case / "output.npy")}, runner_name="reference"))
    save_json(feeds, str(folder / "inputs.json"))
    RunResults([("reference", results)]).save(str(folder / "outputs.json"))
    return [
        "polygraphy",
        "run",
        str(bundle.model),
        "--onnxrt",
        "--load-inputs",
        str(folder / "inputs.json"),
        "--load-outputs",
        str(folder / "outputs.json"),
        "--atol",
        "1e-4",
        "--rtol",
        "1e-3",
    ]


def commands(bundle: Bundle, folder: Path, with_polygraphy: bool) -> dict[str, list[str]]:
    out = {
        "floor": [sys.executable, str(HERE / "floor.py"), str(bundle.root)],
        "floor+libs": [sys.executable, str(HERE / "floor.py"), str(bundle.root), "--libraries"],
        "checker": [*checker_command(), "verify", str(bundle.root), "--format", "json"],
    }
    poly = polygraphy_material(bundle, folder) if with_polygraphy else None
    if poly is not None:
        out["polygraphy"] = poly
    return out


def run_all(cmds: dict[str, list[str]], repeat: int) -> dict[str, list[Measured]]:
    results: dict[str, list[Measured]] = {name: [] for name in cmds}
    for name, cmd in cmds.items():  # once each to warm the page cache
        first = measure(cmd)
        if first.returncode != 0:
            raise SystemExit(f"{name} failed (exit {first.returncode}): {' '.join(cmd)}")
    for _ in range(repeat):  # interleaved, so a slow spell of the machine hits every command alike
        for name, cmd in cmds.items():
            results[name].append(measure(cmd))
    return results


def report(results: dict[str, list[Measured]]) -> None:
    walls = {name: median([m.wall_s for m in runs]) for name, runs in results.items()}
    cpus = {name: median([m.cpu_s for m in runs]) for name, runs in results.items()}
    for name, runs in results.items():
        rss = max(m.peak_rss_mib for m in runs)
        print(
            f"{name:>11}: wall {walls[name]:6.2f} s (runs {', '.join(f'{m.wall_s:.2f}' for m in runs)}); "
            f"cpu {cpus[name]:6.2f} s; peak RSS {rss:6.0f} MiB"
        )
    best = {name: min(m.wall_s for m in runs) for name, runs in results.items()}
    targets = [("floor", 1.15), ("floor+libs", None)] + ([("polygraphy", 0.7)] if "polygraphy" in walls else [])
    for other, target in targets:
        wall, cpu = walls["checker"] / walls[other], cpus["checker"] / cpus[other]
        verdict = (
            "(no target: the floor that loads the checker's libraries)"
            if target is None
            else f"(target <= {target}) {'OK' if wall <= target else 'MISSED'}"
        )
        print(
            f"checker / {other:<10} median wall {wall:.3f}  best wall {best['checker'] / best[other]:.3f}  "
            f"cpu {cpu:.3f}  {verdict}"
        )
    libs = walls["floor+libs"] / walls["floor"]
    print(f"floor+libs / floor   median wall {libs:.3f}  (loading the libraries alone)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--size", type=int, default=640, help="input height and width (a multiple of 32)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", type=Path, help="another graph with one float input [N, 3, H, W]")
    parser.add_argument("--no-polygraphy", action="store_true")
    parser.add_argument("--threads", type=int, default=0, help="fix onnxruntime's intra-op threads (0: its default)")
    args = parser.parse_args()
    model = args.model or real_model()
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        bundle = write_bundle(Path(tmp) / "bundle", model, args.cases, args.size, args.threads)
        print(f"model {model.name}, {args.cases} cases of [1, 3, {args.size}, {args.size}]")
        report(run_all(commands(bundle, Path(tmp), not args.no_polygraphy), args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
