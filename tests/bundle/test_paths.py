"""Bundle-relative paths resolve to real paths inside the bundle; links that leave it, or loop, are refused."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from checker.bundle.paths import BundlePathError, check_relative, resolve_inside, resolve_under, walk_files
from checker.context import Options
from checker.verify import verify_bundle


def test_resolves_as_pathlib_does(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.npy").write_bytes(b"x")
    (tmp_path / "link").symlink_to("a/b")
    for rel in ["a/b/f.npy", "./a//b/f.npy", "link/f.npy", "a/./b", "missing/file", "."]:
        assert resolve_inside(tmp_path, rel) == (tmp_path.resolve() / rel).resolve()


def test_resolves_as_realpath_does_through_every_kind_of_link(tmp_path: Path) -> None:
    """Name by name, with the folders it has looked up kept between calls, against os.path.realpath of the
    whole path: links relative and absolute, to folders and files, inside and out, chained, looping, dangling."""
    root, outside = tmp_path / "bundle", tmp_path / "outside"
    (root / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (root / "a" / "b" / "f.npy").write_bytes(b"x")
    (outside / "x").write_bytes(b"x")
    links = {
        "rel": "a/b",
        "abs": str(root / "a"),
        "out": str(outside),
        "outfile": "../outside/x",
        "loop": "loop2",
        "loop2": "loop",
        "chain": "rel",
        "dangling": "nowhere",
        "a/up": "..",
        "a/b/here": ".",
    }
    for name, target in links.items():
        (root / name).symlink_to(target)
    real_root = os.path.realpath(root)
    names = ["a", "b", "f.npy", "rel", "abs", "out", "outfile", "loop", "chain", "dangling", "up", "here", "x", "new"]
    known: dict[str, str] = {}
    for depth in (1, 2, 3):
        for rel in map("/".join, itertools.product(names, repeat=depth)):
            expected = os.path.realpath(os.path.join(real_root, rel))
            inside = expected == real_root or expected.startswith(real_root + os.sep)
            for cache in (known, None):
                if inside:
                    assert resolve_under(real_root, rel, cache) == Path(expected), rel
                else:
                    with pytest.raises(BundlePathError):
                        resolve_under(real_root, rel, cache)


@pytest.mark.parametrize("rel", ["../x", "a/../../x", "/etc/passwd", "c:/x", "a\\b", "", "out/f"])
def test_paths_that_leave_the_bundle_are_refused(tmp_path: Path, rel: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "out").symlink_to(outside)
    with pytest.raises(BundlePathError):
        resolve_inside(bundle, rel)


def test_a_sibling_folder_with_the_bundles_name_as_prefix_is_outside(tmp_path: Path) -> None:
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle-other").mkdir()
    (tmp_path / "bundle" / "x").symlink_to(tmp_path / "bundle-other")
    with pytest.raises(BundlePathError, match="leaves the bundle"):
        resolve_inside(tmp_path / "bundle", "x")


def test_check_relative_keeps_pathlib_parts() -> None:
    assert check_relative("./a//b/./c").parts == ("a", "b", "c")


def test_walk_lists_files_relative_folder_by_folder_without_following_links(tmp_path: Path) -> None:
    (tmp_path / "b" / "c").mkdir(parents=True)
    for rel in ["z.txt", "b/y.txt", "b/c/x.txt", ".git/ignored"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "linked").symlink_to(tmp_path / "b")
    assert walk_files(tmp_path, 100) == ["z.txt", "b/y.txt", "b/c/x.txt"]
    assert walk_files(tmp_path, 2) == ["z.txt", "b/y.txt"]


def test_a_named_file_that_is_a_link_loop_is_a_finding_not_a_crash(example: Path) -> None:
    labels = example / "labels.txt"
    labels.unlink()
    os.symlink("labels.txt", labels)  # a link to itself
    report = verify_bundle(example, Options(run_comparison=False))
    assert not any(f.id == "internal.error" for f in report.findings)
    assert any(f.id == "bundle.file_missing" and "labels.txt" in f.message for f in report.findings)
