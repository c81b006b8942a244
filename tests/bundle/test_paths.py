"""Bundle-relative paths resolve to real paths inside the bundle; links that leave it, or loop, are refused."""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path

import pytest

from checker.bundle.paths import (
    BundlePathError,
    check_relative,
    folder_tree,
    resolve_inside,
    resolve_under,
    walk_files,
)
from checker.context import Options
from checker.verify import verify_bundle


def test_resolves_as_pathlib_does(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.npy").write_bytes(b"x")
    (tmp_path / "link").symlink_to("a/b")
    for rel in ["a/b/f.npy", "./a//b/f.npy", "link/f.npy", "a/./b", "missing/file", "."]:
        assert resolve_inside(tmp_path, rel) == (tmp_path.resolve() / rel).resolve()


def _lands_inside(real_root: str, path: str) -> bool | None:
    """Where opening `path` really lands: inside the root, outside it, or nowhere (None: the open fails)."""
    try:
        target = os.path.realpath(path, strict=True)
    except OSError:
        return None
    return target == real_root or target.startswith(real_root + os.sep)


@pytest.mark.parametrize("seed", range(4))
def test_no_path_through_links_reaches_outside(tmp_path: Path, seed: int) -> None:
    """Random links in small trees (relative, absolute, chained, looping, half-looping with '..' after the
    loop), every path of up to three names, with the folders looked up kept between calls as a bundle keeps
    them: a path the system opens inside resolves to where it lands, one it opens outside is refused, and no
    path that is accepted lands outside when opened."""
    rng = random.Random(seed)
    names = ["a", "b", "c", "l1", "l2", "l3", "passwd", "d"]
    rels = [rel for depth in (1, 2, 3) for rel in map("/".join, itertools.product(names, repeat=depth))]
    for tree in range(30):
        root, outside = tmp_path / f"t{tree}" / "bundle", tmp_path / f"t{tree}" / "out"
        for folder in ("a/b", "c"):
            (root / folder).mkdir(parents=True)
        (outside / "d").mkdir(parents=True)
        (outside / "passwd").write_text("secret")
        targets = [".", "..", "l1", "l2", "l3", "l1/..", "l2/..", "l1/../l3", "l2/../l3", "l3/../l1", "l1/../a"]
        targets += [str(outside), "../out", "a", "missing/../l3"]
        for folder in ("", "a", "a/b", "c"):
            for link in ("l1", "l2", "l3"):
                if rng.random() < 0.5:
                    (root / folder / link).symlink_to(rng.choice(targets))
        _check_every_path(os.path.realpath(root), rels)


def _check_every_path(real_root: str, rels: list[str]) -> None:
    known: dict[str, str] = {}
    for rel in rels:
        lands = _lands_inside(real_root, os.path.join(real_root, rel))
        try:
            found = resolve_under(real_root, rel, known)
        except BundlePathError:
            assert lands is not True, f"{rel} is refused but opens inside"
            continue
        assert lands is not False, f"{rel} is accepted as {found} but opens outside"
        if lands:
            assert found == Path(os.path.realpath(os.path.join(real_root, rel), strict=True)), rel
        assert _lands_inside(real_root, str(found)) is not False, rel


def test_a_link_behind_a_loop_does_not_lead_outside(tmp_path: Path) -> None:
    """realpath stops at a loop, keeps the rest unresolved and strips its '..' as text: 'x/passwd' would look
    like 'esc/passwd' inside the bundle while opening it reads the outside file."""
    root, outside = tmp_path / "bundle", tmp_path / "out"
    root.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("secret")
    (root / "loop").symlink_to("loop")
    (root / "esc").symlink_to(outside)
    (root / "x").symlink_to("loop/../esc")
    real_root = os.path.realpath(root)
    try:
        found = resolve_under(real_root, "x/passwd")
    except BundlePathError:
        return
    with pytest.raises(OSError):
        found.read_text()


def test_a_missing_name_is_looked_up_again(tmp_path: Path) -> None:
    root, outside = tmp_path / "bundle", tmp_path / "out"
    root.mkdir()
    outside.mkdir()
    real_root = os.path.realpath(root)
    known: dict[str, str] = {}
    assert resolve_under(real_root, "new/passwd", known) == Path(real_root, "new", "passwd")
    (root / "new").symlink_to(outside)  # made after the first lookup
    with pytest.raises(BundlePathError):
        resolve_under(real_root, "new/passwd", known)


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


@pytest.mark.parametrize(
    "rel", ["manifest:/notes.txt", "./manifest:/release/name", "manifest:x", "a\nb", "a/\x1b[2Jb", "tab\tname"]
)
def test_a_path_a_digest_list_line_could_not_hold_is_refused(rel: str) -> None:
    """bundle.sha256 names a manifest field `manifest:/<pointer>` and holds one path per line: a file named so
    could be taken for a field (and left unhashed), and a name with a line break for two lines."""
    with pytest.raises(BundlePathError):
        check_relative(rel)
    assert check_relative("a/manifest:/b").parts == ("a", "manifest:", "b")  # only a first name is a field's


def test_the_field_prefix_is_the_digest_lists() -> None:
    from checker.bundle.paths import FIELD_PREFIX
    from checker.manifest.canonical import PREFIX

    assert FIELD_PREFIX == PREFIX


def test_one_listing_per_folder_gives_every_entry_and_what_the_walk_names(tmp_path: Path) -> None:
    """A verdict store's look-up lists a bundle's folders once, for its plain files and its whole tree (a folder
    state records it): every entry by kind but the repository's own `.git`, and so every name the files stage's
    walk gives."""
    root = tmp_path / "b"
    (root / "cases" / "deep").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".github").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("x")
    for rel in ("bundle.yaml", ".gitignore", "cases/a.npy", "cases/deep/b.npy", ".git/HEAD", ".github/ci.yml"):
        (root / rel).write_text(rel)
    (root / "link.txt").symlink_to("bundle.yaml")  # a link to a file
    (root / "broken").symlink_to("nowhere")
    (root / "away").symlink_to(outside)  # a link to a folder: not walked
    (root / "cases" / "loop").symlink_to("loop")
    os.mkfifo(root / "pipe")
    tree = folder_tree(os.path.realpath(root), 1000)
    assert tree is not None
    assert sorted(tree) == [
        (".github", "folder"), (".github/ci.yml", "file"), (".gitignore", "file"), ("away", "link"), ("broken", "link"),
        ("bundle.yaml", "file"), ("cases", "folder"),
        ("cases/a.npy", "file"), ("cases/deep", "folder"), ("cases/deep/b.npy", "file"), ("cases/loop", "link"),
        ("empty", "folder"), ("link.txt", "link"), ("pipe", "other"),
    ]  # fmt: skip
    walked = {n for n, kind in tree if kind in ("file", "other") or (kind == "link" and not (root / n).is_dir())}
    assert walked - {".github/ci.yml"} == set(walk_files(root, 1000))  # the walk leaves out the top .github too
    for rel in ("cases/.git/config", ".gitlab/ci.yml"):  # any other .git-named folder is the bundle's own
        (root / rel).parent.mkdir()
        (root / rel).write_text(rel)
    assert {"cases/.git/config", ".gitlab/ci.yml"} <= set(walk_files(root, 1000))
    (root / "cases/.git/config").unlink()
    (root / ".gitlab/ci.yml").unlink()
    assert folder_tree(os.path.realpath(root), 13) is None  # past the bound: not told whole
    (root / "cases" / "deep").chmod(0)
    try:
        if not os.access(root / "cases" / "deep", os.R_OK):  # root reads any folder
            assert folder_tree(os.path.realpath(root), 1000) is None
    finally:
        (root / "cases" / "deep").chmod(0o755)


def test_the_walk_gives_os_walks_order_and_survives_a_deep_tree(tmp_path: Path) -> None:
    def by_os_walk(top: Path) -> list[str]:
        out = []
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not (dirpath == str(top) and d in (".git", ".github")))
            folder = os.path.relpath(dirpath, top).replace(os.sep, "/")
            out += [("" if folder == "." else folder + "/") + name for name in sorted(filenames)]
        return out

    rng = random.Random(7)
    root = tmp_path / "b"
    folders = [root]
    root.mkdir()
    for i in range(300):
        parent = rng.choice(folders)
        kind = rng.random()
        if kind < 0.3:
            (parent / f"d{i}").mkdir()
            folders.append(parent / f"d{i}")
        elif kind < 0.4:  # walked, but for the top .git and .github
            name = rng.choice([".git", ".github", f".git{i}"])
            if not (parent / name).exists():
                (parent / name).mkdir()
                (parent / name / "x").write_text("x")
        elif kind < 0.5:
            (parent / f"l{i}").symlink_to(rng.choice(folders))
        else:
            (parent / f"f{i}").write_text("x")
    assert walk_files(root, 10_000) == by_os_walk(root)
    assert walk_files(root, 50) == by_os_walk(root)[:50]
    deep = tmp_path / "deep"
    levels = [deep]
    deep.mkdir()
    for _ in range(1100):  # deeper than os.walk's recursion goes
        levels.append(levels[-1] / "d")
        levels[-1].mkdir()
    (levels[-1] / "leaf.txt").write_text("x")
    try:
        assert walk_files(deep, 10) == ["d/" * 1100 + "leaf.txt"]
        tree = folder_tree(os.fspath(deep), 5000)
        assert tree is not None and len(tree) == 1101
    finally:  # bottom up: removing it is no recursion either
        (levels[-1] / "leaf.txt").unlink()
        for level in reversed(levels):
            level.rmdir()
