"""Bundle-relative paths: the only way a manifest path becomes a file we open."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

MAX_PATH_BYTES = 4095  # PATH_MAX less its NUL
MAX_NAME_BYTES = 255  # NAME_MAX of every common file system
FIELD_PREFIX = "manifest:"  # bundle.sha256 names a manifest field so (manifest/canonical.py): no file may be named so


class BundlePathError(ValueError):
    """A manifest path that is absolute, leaves the bundle, or goes through a link that leaves it."""


def regular_size(path: Path) -> int:
    """The size of a regular file; OSError for anything else, since reading a FIFO or a device never ends."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return info.st_size


def check_relative(rel: str) -> PurePosixPath:
    """Refuse paths that could name anything outside the bundle, before the file system is touched."""
    return PurePosixPath(*relative_parts(rel))


def walked_name(rel: str) -> str:
    """A named path as the folder's walk spells it: './labels.txt' and 'cases//a.npy' are 'labels.txt' and
    'cases/a.npy' (a manifest may write either; the digest list keeps the name as written). A name refused as a
    path is kept as written: it names no file of the folder."""
    try:
        return "/".join(relative_parts(rel))
    except BundlePathError:
        return rel


def relative_parts(rel: str) -> list[str]:
    """check_relative's names, without building a path of them."""
    if not isinstance(rel, str) or not rel.strip():
        raise BundlePathError("the path is empty")
    if "\\" in rel or "\x00" in rel:
        raise BundlePathError(f"'{rel}' must use '/' and no NUL or backslash")
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise BundlePathError(f"'{rel}' is absolute; paths are relative to the manifest's folder")
    parts = [part for part in rel.split("/") if part not in ("", ".")]  # PurePosixPath's parts, made faster
    if ".." in parts:
        raise BundlePathError(f"'{rel}' uses '..'; paths must stay inside the bundle")
    if parts and parts[0].startswith(FIELD_PREFIX):
        raise BundlePathError(f"'{rel}' starts with '{FIELD_PREFIX}', which names a manifest field in bundle.sha256")
    if not rel.isprintable():
        raise BundlePathError(f"'{rel!r}' holds a control character; a bundle.sha256 line could not hold it")
    # The file system's own limits, checked here so that no open or stat fails with "file name too long".
    if len(rel.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise BundlePathError(f"'{rel[:60]}...' is longer than {MAX_PATH_BYTES} bytes")
    if any(len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for part in parts):
        raise BundlePathError(f"'{rel[:60]}...' has a name longer than {MAX_NAME_BYTES} bytes")
    return parts


def resolve_inside(root: Path, rel: str) -> Path:
    """The real path of `rel` under `root`, following links only while they stay inside `root`."""
    return resolve_under(os.path.realpath(root), rel)


def resolve_under(real_root: str, rel: str, known: dict[str, str] | None = None) -> Path:
    """resolve_inside for a root already resolved (os.path.realpath): a bundle resolves its root once. `known`
    (bundle-relative path -> real path, under this root only) may be kept between calls, so that the cases of
    one folder look that folder up once."""
    return Path(real_under(real_root, rel, known))


def real_under(real_root: str, rel: str, known: dict[str, str] | None = None) -> str:
    """resolve_under's real path as a string: a verdict store's look-up resolves thousands without making a
    Path of each."""
    found = real_root
    prefix = ""
    known = {} if known is None else known
    # On strings, one name at a time: a bundle of 10,000 cases resolves 20,000 paths, and os.path.realpath
    # would look up every folder above each of them again (pathlib's resolve costs five times more still).
    for name in relative_parts(rel):
        prefix = f"{prefix}/{name}" if prefix else name
        step = known.get(prefix)
        if step is None:
            step, exists = _real_child(found, name)
            if exists:  # a missing name may yet be made, as a link anywhere: it is looked up again
                known[prefix] = step
        found = step
    if found != real_root and not found.startswith(real_root.rstrip(os.sep) + os.sep):
        raise BundlePathError(f"'{rel}' goes through a link that leaves the bundle")
    return found


FILE, LINK, FOLDER, OTHER = "file", "link", "folder", "other"  # what an entry of a folder_tree is


def _entries(folder: str) -> list[os.DirEntry[str]] | None:
    """A folder's entries, each with the type its listing gives; None where it cannot be listed."""
    try:
        with os.scandir(folder) as listing:
            return list(listing)
    except OSError:
        return None


def folder_tree(root: str, limit: int) -> list[tuple[str, str]] | None:
    """Every entry under `root`, bundle-relative, as (name, kind), in no set order: a regular file reached
    through folders that are not links, a link (not followed), a folder (walked), or anything else (a FIFO, a
    socket, a device). Only the top `.git` folder is left out (a repository's own, which no stage reads and every
    commit changes): a stage may read through a link into any other. One listing per folder, with the types the
    listing gives (no stat). None where the tree cannot be told whole: a folder that cannot be listed, or more
    than `limit` entries."""
    out: list[tuple[str, str]] = []
    folders = [("", root)]
    while folders:
        prefix, folder = folders.pop()
        entries = _entries(folder)
        if entries is None:
            return None
        for entry in entries:
            name = prefix + entry.name
            if entry.is_symlink():
                out.append((name, LINK))
            elif entry.is_dir(follow_symlinks=False):
                if name == ".git":
                    continue
                out.append((name, FOLDER))
                folders.append((name + "/", entry.path))
            else:
                out.append((name, FILE if entry.is_file(follow_symlinks=False) else OTHER))
            if len(out) > limit:
                return None
    return out


def _real_child(folder: str, name: str) -> tuple[str, bool]:
    """The real path of `name` in a folder given by its real path, and whether the name exists: the joined
    path itself unless it is a link. A missing name is kept as written, as os.path.realpath keeps it. A link
    that realpath cannot resolve to the end (a loop, which realpath leaves half resolved and then strips of
    its '..' as text) is kept as the link: opening anything through it fails as the system's own lookup
    does, where realpath's half answer could name a place inside the bundle whose real target is outside."""
    path = os.path.join(folder, name)  # noqa: PTH118 (strings, as resolve_under says)
    try:
        is_link = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return path, False
    if not is_link:
        return path, True
    target = os.path.realpath(path)
    return (target if os.path.realpath(target) == target else path), True


MAX_GLOB_ENTRIES = 100_000  # files and folders a glob may look through


def glob_inside(root: Path, pattern: str) -> list[str]:
    """Bundle-relative paths of the files and folders matching a glob, sorted; matches that leave the bundle
    are dropped.

    The bundle is walked without following links, matching each name segment by segment and going down only
    into folders that can still lead to a match, so neither a linked folder (say, one pointing at /) nor
    repeated '**' (which makes pathlib's glob exponential in the depth of the tree) can make a pattern look
    beyond the bundle or for hours.
    """
    segments = check_relative(pattern).parts
    real_root = root.resolve()
    found, seen = [], 0
    reached = {real_root: _skip_stars({0}, segments)}
    for dirpath, dirnames, filenames in os.walk(real_root, followlinks=False):
        here, folder = reached.pop(Path(dirpath)), Path(dirpath)
        deeper = []
        for name in sorted(d for d in dirnames if not d.startswith(".git")) + filenames:
            seen += 1
            if seen > MAX_GLOB_ENTRIES:
                raise BundlePathError(f"'{pattern}' would search more than {MAX_GLOB_ENTRIES} files and folders")
            reach = _step(here, name, segments)
            if len(segments) in reach:
                found.append((folder / name).relative_to(real_root).as_posix())
            if name in dirnames and any(j < len(segments) for j in reach):
                deeper.append(name)
                reached[folder / name] = reach
        dirnames[:] = deeper
    return sorted(rel for rel in found if _stays_inside(real_root, rel))


def _stays_inside(root: Path, rel: str) -> bool:
    try:
        resolve_inside(root, rel)
    except BundlePathError:
        return False
    return True


def _step(reach: set[int], name: str, segments: tuple[str, ...]) -> set[int]:
    """The positions in `segments` reached after one more path segment, `name` ('**' is any number of them)."""
    step = {j for j in reach if j < len(segments) and segments[j] == "**"}
    step |= {j + 1 for j in reach if j < len(segments) and segments[j] != "**" and fnmatchcase(name, segments[j])}
    return _skip_stars(step, segments)


def _skip_stars(reach: set[int], segments: tuple[str, ...]) -> set[int]:
    """Add the positions reached by letting a '**' match no folder at all."""
    out, todo = set(reach), list(reach)
    while todo:
        j = todo.pop()
        if j < len(segments) and segments[j] == "**" and j + 1 not in out:
            out.add(j + 1)
            todo.append(j + 1)
    return out


# A repository's own folders at the top of a bundle folder, which model-signing leaves out of a signature (with
# the `.gitattributes` and `.gitignore` files) and no stage reads. Anything deeper, or named otherwise (a
# `.gitlab` folder, a `.git` folder in a sub-folder), is the bundle's like any other file: signed, digested when
# named, warned about when not.
REPOSITORY_FOLDERS = (".git", ".github")


def _walked_into(entry: os.DirEntry[str], prefix: str, skip: Callable[[str], bool] | None) -> bool:
    if (prefix == "" and entry.name in REPOSITORY_FOLDERS) or entry.is_symlink():
        return False
    return skip is None or not skip(prefix + entry.name)


def walk_files(root: Path, limit: int, skip: Callable[[str], bool] | None = None) -> list[str]:
    """Every file under `root` that is not a folder (a link to a folder counts as one), bundle-relative: each
    folder's own sorted, then its sub-folders' in sorted order, as os.walk gives them top-down. The top
    REPOSITORY_FOLDERS, links, and the folders `skip` picks (by bundle-relative name) are not walked into. At
    most `limit`. On a stack of its own, not os.walk's recursion, so that a bundle of folders nested a thousand
    deep is walked, not a crash."""
    out: list[str] = []
    folders = [("", os.fspath(root))]
    while folders:
        prefix, folder = folders.pop()
        files, subfolders = [], []
        for entry in _entries(folder) or []:  # as os.walk skips a folder it cannot list
            try:
                is_dir = entry.is_dir()  # as os.walk sorts it: a link to a folder is a folder
            except OSError:
                is_dir = False
            if not is_dir:
                files.append(entry.name)
            elif _walked_into(entry, prefix, skip):
                subfolders.append(entry)
        for name in sorted(files):
            out.append(prefix + name)
            if len(out) >= limit:
                return out
        for entry in sorted(subfolders, key=lambda e: e.name, reverse=True):  # the first sorted is walked first
            folders.append((f"{prefix}{entry.name}/", entry.path))
    return out
