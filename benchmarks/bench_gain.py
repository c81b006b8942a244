"""The gain stage's timing (checker.compare.timing.paired): its own overhead and how far repeated runs agree.

    python benchmarks/bench_gain.py [--repeat 9] [--budget 1.0]

Overhead: the example's baseline against a second session of the same graph; the median ratio should be 1,
and its interval shows the noise floor of this machine. Repeatability: the example's int8 variant against its
baseline, measured --repeat times in fresh sessions; the spread of the medians against their intervals.
Target: the same-graph ratio within 0.95 to 1.05 and the repeated medians within a few per cent of each other.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from checker.compare.session import open_session, resolve_runtime, timed_run
from checker.compare.timing import Timing, paired

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mobilenet-tiny"


def _cases() -> list[dict[str, np.ndarray]]:
    return [{"pixel_values": np.load(p)} for p in sorted((EXAMPLE / "cases").glob("*/pixel_values.npy"))]


def measure(base: Path, variant: Path, budget: float) -> Timing:
    runtime = resolve_runtime({"session_options": {"intra_op_num_threads": 1}})
    sessions = [open_session(base, runtime), open_session(variant, runtime)]
    cases = _cases()
    names = [[i.name for i in s.get_inputs()] for s in sessions]

    def runner(k: int):  # type: ignore[no-untyped-def]
        return lambda i: timed_run(sessions[k], None, {n: cases[i][n] for n in names[k]})

    return paired(runner(0), runner(1), len(cases), budget)


def overhead(base: Path, repeat: int = 2000) -> None:
    """What a timed run (the run options and the watchdog that can stop a graph) adds to session.run."""
    session = open_session(base, resolve_runtime({"session_options": {"intra_op_num_threads": 1}}))
    feed = _cases()[0]
    for _ in range(repeat // 10):  # warm both up first: the first runs allocate
        session.run(None, feed)
    spent = []
    for run in (lambda: session.run(None, feed), lambda: timed_run(session, None, feed)):
        start = time.perf_counter()
        for _ in range(repeat):
            run()
        spent.append((time.perf_counter() - start) / repeat)
    print(
        f"one run: {spent[0] * 1e6:.1f} us bare, {spent[1] * 1e6:.1f} us timed (+{(spent[1] - spent[0]) * 1e6:.1f} us)"
    )


def show(label: str, runs: list[Timing]) -> None:
    medians = [t.faster for t in runs]
    print(f"{label}: median ratio {statistics.median(medians):.4f} (runs {min(medians):.4f} to {max(medians):.4f})")
    for t in runs:
        print(f"  {t.faster:.4f} [{t.low:.4f}, {t.high:.4f}] {t.rounds} rounds in {t.elapsed_s:.3f} s ({t.stopped})")
    inside = sum(1 for t in runs if t.low <= statistics.median(medians) <= t.high)
    spread = max(medians) / min(medians) - 1
    print(f"  medians spread by {spread:.1%}; {inside} of {len(runs)} intervals hold the median of the medians")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--budget", type=float, default=1.0)
    args = parser.parse_args()
    if not _cases():
        raise SystemExit(f"no cases found under {EXAMPLE / 'cases'}")
    base, int8 = EXAMPLE / "model.onnx", EXAMPLE / "model.int8.onnx"
    overhead(base)
    show("same graph (overhead and noise)", [measure(base, base, args.budget) for _ in range(args.repeat)])
    show("int8 against float", [measure(base, int8, args.budget) for _ in range(args.repeat)])


if __name__ == "__main__":
    main()
