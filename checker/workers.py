"""Worker processes for bundles verified side by side (`--jobs`): how many the cores and the memory allow, how
they start, and the options a worker runs with. `verify.py` and the verdict store (`store/run.py`) share them."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from checker.bundle.opening import is_archive

if TYPE_CHECKING:
    from checker.context import Options

# Memory a worker needs besides its bundle's files (interpreter, libraries, a session's own), and the peak a
# bundle's files cost at most while verified (benchmarks/bench_memory.py measures 1.09x the weights).
WORKER_BASE_BYTES = 300 << 20
PEAK_PER_BYTE = 1.3


def worker_options(options: Options, workers: int) -> Options:
    """Workers draw no progress bar (several would overwrite each other) and share the cores between them."""
    threads = max(1, (os.cpu_count() or 1) // workers)
    return dataclasses.replace(options, progress=False, jobs=1, intra_op_threads=threads, sharing=workers)


def start_method() -> str:
    """Fork where it is safe and quiet: a forked worker starts with the libraries this process has loaded (not
    onnxruntime, which only a stage loads), where a fresh interpreter would import them all again. Python 3.12
    warns when a process with threads (the BLAS's) forks, and other systems' libraries may not survive it."""
    import threading

    alone = threading.active_count() == 1  # a thread of ours could hold a lock the forked copy never frees
    if sys.platform.startswith("linux") and sys.version_info < (3, 12) and alone and "onnxruntime" not in sys.modules:
        return "fork"
    return "spawn"


def pool_size(paths: list[Path], jobs: int) -> int:
    """Workers to run: at most `jobs` and one per bundle, and no more than the memory holds when each
    verifies the largest bundle at once."""
    wanted = min(jobs, len(paths))
    if wanted <= 1:
        return 1
    available = available_memory()
    if available is None:
        return wanted
    largest = max(bundle_bytes(p) for p in paths)
    return max(1, min(wanted, int(available // (WORKER_BASE_BYTES + PEAK_PER_BYTE * largest))))


def bundle_bytes(path: Path) -> int:
    """The size of a bundle's files (graphs, weights and cases alike: an upper bound on the weights), or of
    its archive. Links are not followed."""
    folder = path.parent if path.is_file() and not is_archive(path) else path
    if folder.is_file():
        return folder.stat().st_size
    total, folders = 0, [os.fspath(folder)]
    while folders:  # on strings and scandir's entries: sizing twenty bundles must not cost a tenth of a second
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                else:
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def available_memory() -> int | None:
    """Memory available to new processes (MemAvailable counts the page cache the kernel can drop)."""
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
