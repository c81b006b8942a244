"""Hostile manifests, small and large: each costly shape gets the finding it always had (its id, words and line),
from the libyaml pass alone once the text is too large to ask ruamel.yaml about, and a plain large manifest is
parsed once. (How long a 16 MiB one takes is measured by benchmarks/bench_hostile_manifest.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checker.manifest import yamltree
from checker.manifest.load import load_manifest
from checker.manifest.yamltree import MAX_DEPTH, MAX_DOUBTFUL_BYTES

HEAD = "manifest_version: 1\nrelease: {name: hostile, version: 1.0.0}\n"
LARGE = MAX_DOUBTFUL_BYTES + 4096


def padded(tail: str, size: int) -> str:
    """A manifest of about `size` bytes: a head, plain outputs as a tool writes them, then `tail`."""
    output = "  - name: layer_{i:05d}/output\n    dtype: float32\n    shape: [batch, 768]\n    meaning: embedding\n"
    parts, total, i = [HEAD, "outputs:\n"], len(HEAD) + 9 + len(tail), 0
    while total < size:
        parts.append(output.format(i=i))
        total += len(parts[-1])
        i += 1
    return "".join(parts) + tail


# (the costly part at the manifest's end, its 1-based line counted from the end, the finding's words)
SHAPES = {
    "anchor": ("tail: &a 1\n", 1, "YAML anchors and aliases are not allowed"),
    "alias": ("tail: [1, *a]\n", 1, "YAML anchors and aliases are not allowed"),
    "complex key": ("? [a, b]\n: c\n", 2, "a list or mapping as a key (a YAML complex key) is not allowed"),
    "complex flow key": ("tail: {[a]: b}\n", 1, "a list or mapping as a key (a YAML complex key) is not allowed"),
    "too deep": ("tail: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n", 1, "nested more than 64 levels deep"),
}


def found(path: Path, text: str) -> list[tuple[str, str, int | None]]:
    path.write_text(text, encoding="utf-8")
    manifest, findings = load_manifest(path)
    assert manifest is None
    return [(f.id, f.message, f.line) for f in findings]


@pytest.fixture
def no_ruamel(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Records every text given to ruamel.yaml: a large manifest must be decided without it."""
    asked: list[str] = []
    real = yamltree._ruamel_tree

    def record(text: str, name: str) -> tuple[Any, list[Any]]:
        asked.append(text)
        return real(text, name)

    monkeypatch.setattr(yamltree, "_ruamel_tree", record)
    yield asked


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_a_costly_shape_gets_the_same_finding_small_or_large(
    shape: tuple[str, int, str], tmp_path: Path, no_ruamel: list[str]
) -> None:
    tail, from_end, words = shape
    for size in (4096, LARGE):
        text = padded(tail, size)
        line = text.count("\n") - from_end + 1
        assert found(tmp_path / "bundle.yaml", text) == [("manifest.parse", words, line)], size
    assert [len(t) for t in no_ruamel] == [len(padded(tail, 4096))]  # ruamel.yaml decided the small one only


def test_the_node_count_refuses_a_wide_list_at_any_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ruamel: list[str]
) -> None:
    monkeypatch.setattr(yamltree, "MAX_NODES", 20_000)
    for size in (4096, LARGE):
        text = padded("tail: [" + ",".join(["1"] * 30_000) + "]\n", size)
        assert found(tmp_path / "bundle.yaml", text) == [("manifest.parse", "more than 20000 YAML nodes", None)]
    assert len(no_ruamel) == 1


def test_the_fuzzed_manifest_of_many_outputs_and_one_complex_key_is_refused_at_that_key(
    tmp_path: Path, no_ruamel: list[str]
) -> None:
    # The measured case (20,000 outputs in 3.9 MB and one complex key) took minutes; a tenth of it here.
    text = padded("? [a, b]\n: c\n", 400_000)
    assert text.count("- name:") > 2000
    line = text.count("\n") - 1
    assert found(tmp_path / "bundle.yaml", text) == [
        ("manifest.parse", "a list or mapping as a key (a YAML complex key) is not allowed", line)
    ]
    assert no_ruamel == []


@pytest.mark.parametrize(
    ("tail", "words"),
    [
        ("tail: !!str 5\n", "the YAML tag 'tag:yaml.org,2002:str'"),
        ("release: {name: again, version: 2.0.0}\n", "the key 'release' a second time"),
        ("tail: 0o17\n", "the unquoted value '0o17'"),
        ("tail:\t1\n", "a tab or an unusual line break or mark ('\\t')"),
    ],
)
def test_a_large_manifest_must_be_plain(tail: str, words: str, tmp_path: Path, no_ruamel: list[str]) -> None:
    """What only ruamel.yaml could settle is settled by it in a small manifest, and is the finding in a large one
    (ruamel.yaml would take minutes over 16 MiB), at its line."""
    small = tmp_path / "small" / "bundle.yaml"
    small.parent.mkdir()
    small.write_text(padded(tail, 4096), encoding="utf-8")
    assert not any("must be plain" in f.message for f in load_manifest(small)[1])  # ruamel.yaml's own reading
    text = padded(tail, LARGE)
    ((fid, message, line),) = found(tmp_path / "bundle.yaml", text)
    assert fid == "manifest.parse" and words in message and "must be plain YAML or JSON" in message
    assert line == text.count("\n") - tail.count("\n") + 1
    assert len(no_ruamel) == 1


def test_a_plain_large_manifest_is_parsed_once_by_libyaml(tmp_path: Path, no_ruamel: list[str]) -> None:
    path = tmp_path / "bundle.yaml"
    path.write_text(padded("", LARGE), encoding="utf-8")
    manifest, findings = load_manifest(path)
    assert manifest is not None and no_ruamel == []
    assert manifest.line("outputs", 1000, "meaning") == 3 + 4 * 1000 + 4
    assert {f.id for f in findings} == {"manifest.schema"}  # the outputs are over the schema's 256
