"""Peak memory per megapixel of rebuilding one large raw image, as `checker verify` rebuilds it.

    python benchmarks/bench_image_memory.py [--sizes 1000,3000,7000] [--photos 12,25,49.7]

Target: memory in proportion to the work. The shipped example's crop-and-normalize steps (a centre crop to
32 x 32, /255, ImageNet mean and std) on greyscale PNGs of N x N pixels: the declared build alone, and the
fidelity check with a stored tensor no edit explains (the explanation search runs). Each measurement runs in a
subprocess of its own: peak RSS (resource.getrusage) and the peak of NumPy's allocations (tracemalloc), and
the peak RSS above a process that has only decoded the file, per megapixel.

Then a whole `checker verify` of the shipped example (examples/mobilenet-tiny: resize the shorter side to 36,
centre crop) whose first case's raw file is a colour JPEG photograph of M megapixels (3:2) that its stored
tensor does not match, so the explanation search runs with every alternative (OpenCV's decode and resize
among them when OpenCV is installed): peak RSS of the process (GNU time) and wall time. Target: the
49.7-megapixel photograph under 600 MB.
"""

from __future__ import annotations

import argparse
import json
import shutil
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


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mobilenet-tiny"


def write_photo(path: Path, mpx: float) -> tuple[int, int]:
    """A colour photograph of about `mpx` megapixels (3:2, under the 50-megapixel bound): the example's own
    meadow enlarged, with a fine pattern so that the JPEG is as large as a camera's."""
    h = int((mpx * 1e6 / 1.5) ** 0.5) // 8 * 8
    w = int(mpx * 1e6 / h) // 8 * 8
    with Image.open(EXAMPLE / "cases" / "meadow" / "photo.png") as im:
        big = np.asarray(im.convert("RGB").resize((w, h), Image.Resampling.BILINEAR))
    noise = (np.arange(w, dtype=np.uint8)[None, :, None] * 7 + np.arange(h, dtype=np.uint8)[:, None, None]) % 23
    Image.fromarray(big + noise.astype(np.uint8)).save(path, quality=90)
    return w, h


def verify_photo(folder: Path, mpx: float) -> tuple[tuple[int, int], float, float, int]:
    """(w, h), peak RSS in MiB, wall seconds and the exit code of `checker verify` on the example with the
    first case's raw file replaced by a photograph of `mpx` megapixels (its stored tensor left: a mismatch)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from material import checker_command, measure

    bundle = folder / "bundle"
    shutil.copytree(EXAMPLE, bundle)
    size = write_photo(bundle / "cases" / "meadow" / "photo.jpg", mpx)
    (bundle / "cases" / "meadow" / "photo.png").unlink()
    manifest = bundle / "bundle.yaml"
    manifest.write_text(manifest.read_text().replace("cases/meadow/photo.png", "cases/meadow/photo.jpg"))
    subprocess.run([*checker_command(), "lock", str(manifest)], check=True, capture_output=True)
    found = measure([*checker_command(), "verify", str(manifest)], cwd=bundle)
    return size, found.peak_rss_mib, found.wall_s, found.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000,7000", help="sides of the square test images")
    parser.add_argument("--photos", default="12,25,49.7", help="megapixels of the photographs for a whole verify")
    args = parser.parse_args()
    mib = 1 << 20
    print(f"{'image':>12} {'Mpx':>6} {'what':>9} {'peak RSS':>10} {'over decode':>12} {'per Mpx':>9} {'NumPy':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for side in (int(s) for s in args.sizes.split(",") if s):
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
        print(f"\n{'photograph':>12} {'Mpx':>6} {'checker verify peak RSS':>24} {'per Mpx':>9} {'wall':>7} {'exit':>5}")
        for mpx in (float(m) for m in args.photos.split(",") if m):
            (w, h), rss, wall, code = verify_photo(Path(tmp) / f"photo{mpx}", mpx)
            real = w * h / 1e6
            print(f"{w}x{h:<7} {real:6.1f} {rss:20.0f} MiB {rss / real:5.1f} MiB {wall:6.1f}s {code:5d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
