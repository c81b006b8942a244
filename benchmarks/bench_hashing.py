"""File digests (checker.readers.digest.sha256_files, several files in parallel) against one hashlib.sha256 stream.

    python benchmarks/bench_hashing.py [--files 4] [--mib 256] [--repeat 5]

Target: sha256_files hashes the same bytes at >= 0.9x the speed of a single SHA-256 stream over all of them.
The files are read once first, so both sides read from the page cache.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

from material import median

from checker.readers.digest import sha256_files

CHUNK = 1 << 20


def write_files(folder: Path, count: int, mib: int) -> list[Path]:
    paths = []
    block = hashlib.sha256(b"seed").digest() * (CHUNK // 32)
    for i in range(count):
        path = folder / f"weights-{i}.bin"
        with path.open("wb") as out:
            for j in range(mib):
                out.write(block[j % 32 :] + block[: j % 32])
        paths.append(path)
    return paths


def one_stream(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def timed(fn: object, paths: list[Path], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(paths)  # type: ignore[operator]
        runs.append(time.perf_counter() - start)
    return median(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--mib", type=int, default=256, help="size of each file")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hash-") as tmp:
        paths = write_files(Path(tmp), args.files, args.mib)
        one_stream(paths)  # warm the page cache
        stream = timed(one_stream, paths, args.repeat)
        files = timed(sha256_files, paths, args.repeat)
    total = args.files * args.mib
    speed = stream / files
    print(
        f"{args.files} files x {args.mib} MiB: one stream {total / stream:7.0f} MiB/s, "
        f"sha256_files {total / files:7.0f} MiB/s"
    )
    print(f"sha256_files / one stream = {speed:.2f}x speed (target >= 0.9) {'OK' if speed >= 0.9 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
