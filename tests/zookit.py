"""A zoo of releases for the verdict store's and the planner's tests: copies of the example bundle, each its own
release (its own name, so its own digest), locked; and a git repository around them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from bundlekit import EXAMPLE

from checker.release.lock import lock


def release(dest: Path, name: str) -> Path:
    """The example as the release `name`, locked."""
    shutil.copytree(EXAMPLE, dest)
    manifest = dest / "bundle.yaml"
    manifest.write_text(manifest.read_text().replace("name: mobilenet-tiny", f"name: {name}", 1))
    assert lock(dest).ok
    return dest


def zoo(folder: Path, count: int) -> list[Path]:
    """`count` releases side by side under `folder`, in their order."""
    return [release(folder / f"m{i:02d}", f"m{i:02d}") for i in range(count)]


def change(bundle: Path) -> None:
    """A real change to a release: its version bumped (a manifest field, so its digest), and the bundle locked."""
    manifest = bundle / "bundle.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1.0.0", "version: 1.0.1", 1))
    assert lock(bundle).ok


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def repository(folder: Path) -> Path:
    """A git repository of everything under `folder`, committed once."""
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "zoo")
    return folder
