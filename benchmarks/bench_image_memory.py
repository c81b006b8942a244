"""Peak memory per megapixel of rebuilding one large raw image, as `checker verify` rebuilds it.

    python benchmarks/bench_image_memory.py [--sizes 1000,3000,7000]

Target: memory in proportion to the work. The shipped example's crop-and-normalize steps (a centre crop to
32 x 32, /255, ImageNet mean and std) on greyscale PNGs of N x N pixels: the declared build alone, and the
fidelity check with a stored tensor no edit explains (the explanation search runs). Each measurement runs in a
subprocess of its own: peak RSS (resource.getrusage) and the peak of NumPy's allocations (tracemalloc), and
the peak RSS above a process that has only decoded the file, per megapixel.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

CHILD = r"""
import json, resource, sys, tracemalloc
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[3])
path, what = Path(sys.argv[1]), sys.argv[2]
from checker.preprocess.image.decode import decode
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
STEPS = [{"decode": {"mode": "RGB"}}, {"crop": {"center": [32, 32]}}, {"scale": 1 / 255},
         {"normalize": {"mean": MEAN, "std": STD}}, {"layout": "NCHW"}]
tracemalloc.start()
if what == "decode":
    decode(path, path.name)
elif what == "build":
    from checker.preprocess.image.pipeline import run
    from checker.preprocess.image.steps import parse_steps
    run(parse_steps(STEPS), decode(path, path.name), "NCHW", "float32")
else:
    from prepkit import bundle_maker
    from checker.checks.fidelity import fidelity_stage
    entry = {"name": "x", "dtype": "float32", "shape": [1, 3, 32, 32], "layout": "NCHW",
             "preprocessing": {"kind": "image", "steps": STEPS}}
    stored = np.full((1, 3, 32, 32), 9.0, np.float32)  # nothing explains it: the whole search runs
    ctx = bundle_maker(Path(sys.argv[4]))([entry], [{"name": "c", "inputs": {"x": stored}, "raw": {"x": path}}])
    list(fidelity_stage(ctx))
print(json.dumps({"rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "numpy": tracemalloc.get_traced_memory()[1]}))
"""


def write_image(path: Path, side: int) -> None:
    arr = np.zeros((side, side), np.uint8)
    arr[::97], arr[:, ::89] = 200, 90
    Image.fromarray(arr, "L").save(path)


def measure(path: Path, what: str, folder: Path) -> dict[str, int]:
    tests = Path(__file__).resolve().parents[1] / "tests"
    folder.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), what, str(tests), str(folder)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    result: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000,7000", help="sides of the square test images")
    args = parser.parse_args()
    mib = 1 << 20
    print(f"{'image':>12} {'Mpx':>6} {'what':>9} {'peak RSS':>10} {'over decode':>12} {'per Mpx':>9} {'NumPy':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for side in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"grey-{side}.png"
            write_image(path, side)
            mpx = side * side / 1e6
            base = measure(path, "decode", Path(tmp) / f"d{side}")
            for what in ("build", "explain"):
                found = measure(path, what, Path(tmp) / f"{what}{side}")
                over = max(0, found["rss"] - base["rss"])
                print(
                    f"{side}x{side:<7} {mpx:6.1f} {what:>9} {found['rss'] / mib:8.0f} MiB {over / mib:8.0f} MiB "
                    f"{over / mib / mpx:7.2f} MiB {found['numpy'] / mib:7.0f} MiB"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
