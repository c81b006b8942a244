"""`checker verify` on a small model, where the fixed cost shows: against the floor and against polygraphy.

    python benchmarks/bench_small.py [--cases 64] [--repeat 5] [--threads 1] [--no-polygraphy]

The model is a ~1 MB image classifier (material.small_model: [N, 3, 32, 32] -> 10 probabilities, seeded weights),
with `--cases` cases. Every command runs once to warm the page cache, then `--repeat` times, interleaved.
Targets: checker <= 1.15x the floor's wall time (floor.py: onnxruntime, the cases, numpy.allclose) and <= 0.7x
`polygraphy run --onnxrt --load-inputs --load-outputs`.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench_verify import commands, report, run_all
from material import small_model, write_bundle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime's intra-op threads (0: its default)")
    parser.add_argument("--no-polygraphy", action="store_true")
    args = parser.parse_args()
    model = small_model()
    with tempfile.TemporaryDirectory(prefix="bench-small-") as tmp:
        bundle = write_bundle(Path(tmp) / "bundle", model, args.cases, 32, args.threads)
        size = model.stat().st_size / 1e6
        print(f"model {model.name} ({size:.2f} MB), {args.cases} cases of [1, 3, 32, 32]")
        report(run_all(commands(bundle, Path(tmp), not args.no_polygraphy), args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
