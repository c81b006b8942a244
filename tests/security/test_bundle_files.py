"""The manifest and the files it names, made hostile: deep nesting, links out of the bundle, FIFOs, globs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from hostile import ids, messages, rewrite_manifest

from checker.bundle.paths import glob_inside
from checker.manifest.load import parse_text
from checker.readers.labelfiles import LabelError, from_text
from checker.reports.model import BundleReport


def test_deeply_nested_yaml_is_refused_from_the_event_stream() -> None:
    # ruamel.yaml's scanner is quadratic in flow nesting: 10000 '[' took hours before this bound.
    tree, found = parse_text("[" * 10_000 + "]" * 10_000, "bundle.yaml")
    assert tree is None and "nested more than 64 levels deep" in found[0].message


def test_deeply_nested_block_yaml_is_refused() -> None:
    tree, found = parse_text("- " * 5_000 + "x\n", "bundle.yaml")
    assert tree is None and found[0].id == "manifest.parse" and found[0].line == 1


def test_a_manifest_linked_from_outside_is_neither_read_nor_written(
    tmp_path: Path, example: Path, verify: Callable[..., BundleReport], cli: Callable[..., tuple[int, str, str]]
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text((example / "bundle.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    before = outside.read_bytes()
    (example / "bundle.yaml").unlink()
    (example / "bundle.yaml").symlink_to(outside)
    report = verify(example)
    assert ids(report) == ["bundle.path"] and "link to a file outside the bundle" in report.findings[0].message
    code, out, _ = cli("lock", example)
    assert code == 1 and "outside the bundle" in out
    assert outside.read_bytes() == before


def _verify_in_a_process(path: Path) -> subprocess.CompletedProcess[str]:
    """A FIFO blocks whoever reads it: run the checker where a hang ends in a timeout, not a stuck suite."""
    command = [sys.executable, "-m", "checker", "verify", str(path), "--format", "json"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_a_fifo_as_preprocessing_config_does_not_block(example: Path) -> None:
    # The range stage read preprocessing.config before any stage had refused the FIFO.
    os.mkfifo(example / "preprocessor_config.json")
    rewrite_manifest(example, lambda d: d["inputs"][0]["preprocessing"].update(config="preprocessor_config.json"))
    done = _verify_in_a_process(example)
    assert done.returncode == 1, done.stderr
    assert "'preprocessor_config.json' is not a regular file" in done.stdout


def test_deeply_nested_labels_json_is_a_labels_finding(example: Path, verify: Callable[..., BundleReport]) -> None:
    (example / "labels.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    rewrite_manifest(example, lambda d: d["outputs"][0].update(labels={"path": "labels.json"}))
    report = verify(example)
    assert any("nests too deeply" in m for m in messages(report, "labels.invalid"))


def test_a_python_literal_label_list_is_bounded_before_parsing(tmp_path: Path) -> None:
    # Python's parser spent 3.6 GB on a 14 MB literal; a label literal (in graph metadata) is a few kilobytes.
    try:
        from_text("[" + "1," * 1_000_000 + "]", "metadata 'names'")
    except LabelError as exc:
        assert "cannot be parsed" in str(exc)
    else:
        raise AssertionError("a 2 MB literal was parsed")
    assert from_text("{0: 'cat', 1: 'dog'}", "metadata") == ["cat", "dog"]


def test_deeply_nested_preprocessor_config_is_a_fidelity_finding(
    example: Path, verify: Callable[..., BundleReport]
) -> None:
    (example / "preprocessor_config.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    rewrite_manifest(example, lambda d: d["inputs"][0]["preprocessing"].update(config="preprocessor_config.json"))
    report = verify(example)
    assert any("nests too deeply" in m for m in messages(report, "inputs.fidelity"))


def test_repeated_double_star_globs_stay_linear(tmp_path: Path) -> None:
    # pathlib's glob multiplies its work by the depth at each '**': six of them over 40 folders took hours.
    deep = tmp_path.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "input_0.pb").write_bytes(b"")
    found = glob_inside(tmp_path, "/".join(["**"] * 6) + "/input_0.pb")
    assert found == ["/".join(["d"] * 40) + "/input_0.pb"]


def test_globs_do_not_look_through_a_link_to_outside(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    (root / "sets" / "set_0").mkdir(parents=True)
    (tmp_path / "outside" / "set_9").mkdir(parents=True)
    (root / "sets" / "out").symlink_to(tmp_path / "outside")
    (root / "sets" / "in").symlink_to(root / "sets" / "set_0")
    assert glob_inside(root, "sets/*") == ["sets/in", "sets/set_0"]  # a link inside the bundle still matches
    assert glob_inside(root, "sets/out/*") == []  # pathlib's glob lists the folder the link points at
    assert glob_inside(root, "sets/*/set_*") == []


def test_globs_match_as_before_on_ordinary_trees(tmp_path: Path) -> None:
    for rel in ("cases/a/test_data_set_0/input_0.pb", "cases/b/test_data_set_1/input_0.pb", "cases/x.npy"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    for pattern in ("cases/*/test_data_set_*", "cases/**/input_0.pb", "**/*.npy", "cases/[ab]/*", "cases/?/*_1"):
        expected = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.glob(pattern))
        assert glob_inside(tmp_path, pattern) == expected, pattern
