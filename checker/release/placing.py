"""Putting a graph file in a bundle: where it sits, bundle-relative, with its external data, and their digests.

A graph inside the bundle folder stays where it is; one outside is copied in beside the manifest, with the
external-data files it names, so the manifest never names a path that leaves the bundle.
"""

from __future__ import annotations

import filecmp
import shutil
from dataclasses import dataclass
from pathlib import Path

from checker.bundle.paths import BundlePathError, resolve_inside
from checker.errors import Error
from checker.readers.digest import sha256_files


class PlaceError(Error):
    """The graph cannot be put in the bundle."""


@dataclass(frozen=True)
class Placed:
    """Where the graph sits in the bundle and the digests of its files."""

    graph: str  # bundle-relative path of the .onnx file
    external: list[str]  # bundle-relative paths of its external-data files
    digests: dict[str, str]
    copied: list[str]  # bundle-relative files copied into the folder


def place(model: Path, root: Path, locations: list[str], force: bool) -> Placed:
    """The graph's bundle-relative paths, after copying it and its external data (`locations`, relative to the
    graph's folder) into `root` when it lies outside."""
    real_root, real_model = root.resolve(), model.resolve()
    if real_root in real_model.parents:
        graph = real_model.relative_to(real_root).as_posix()
        copied: list[str] = []
    else:
        graph = model.name
        copied = [graph, *locations]
        _copy_in(model.parent, root, [(model.name, graph), *((loc, loc) for loc in locations)], force)
    folder = graph.rpartition("/")[0]
    external = [f"{folder}/{loc}" if folder else loc for loc in locations]
    return Placed(graph, external, _digests(root, [graph, *external]), copied)


def _copy_in(source_dir: Path, root: Path, pairs: list[tuple[str, str]], force: bool) -> None:
    for rel_from, rel_to in pairs:
        try:
            source, target = resolve_inside(source_dir, rel_from), resolve_inside(root, rel_to)
        except BundlePathError as exc:
            raise PlaceError(f"'{rel_from}' cannot be copied into the bundle: {exc}") from exc
        if not source.is_file():
            raise PlaceError(f"{source}: the graph keeps its weights there, but it is not a file")
        if target.is_file() and filecmp.cmp(source, target, shallow=False):
            continue  # the same bytes are there already (a variant recorded anew)
        if target.exists() and not force:
            raise PlaceError(f"{target} exists already; pass --force to replace it with {source}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def _digests(root: Path, rels: list[str]) -> dict[str, str]:
    paths = {}
    for rel in rels:
        try:
            paths[rel] = resolve_inside(root, rel)
        except BundlePathError as exc:
            raise PlaceError(f"the graph's file '{rel}' leaves the bundle: {exc}") from exc
        if not paths[rel].is_file():
            raise PlaceError(f"the graph's external data '{rel}' does not exist in {root}")
    by_path = sha256_files(paths.values())
    return {rel: by_path[path] for rel, path in paths.items()}
