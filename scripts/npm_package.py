"""For the fixture scripts: an npm package unpacked into a temporary folder, or one given on the command line."""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def package_folder(name: str, version: str, doc: str | None) -> Iterator[Path]:
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("package", nargs="?", type=Path, help=f"an unpacked {name} package")
    given: Path | None = parser.parse_args().package
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["npm", "pack", f"{name}@{version}"], cwd=tmp, check=True, capture_output=True)
        with tarfile.open(next(Path(tmp).glob("*.tgz"))) as tar:
            tar.extractall(tmp, filter="data")
        yield Path(tmp) / "package"
