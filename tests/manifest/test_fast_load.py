"""The two manifest parsers agree: libyaml's fast path gives the same data, lines and findings as ruamel.yaml's.

The corpus: every manifest in the repository, the hostile texts of tests/security, YAML's awkward corners, and
generated text. Agreement means the same findings (id, message, line), the same plain data, and the same line
for every field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from bundlekit import EXAMPLE
from hypothesis import given, settings
from hypothesis import strategies as st

from checker.manifest import yamltree
from checker.manifest.load import Manifest
from checker.manifest.yamltree import MAX_DEPTH, MarkedMap, parse_marked, parse_text, plain_data, to_plain

REPO = EXAMPLE.parent.parent
REPO_MANIFESTS = sorted(
    p
    for pattern in ("bundle.yaml", "bundle.yml", "bundle.json")
    for p in REPO.rglob(pattern)
    if ".venv" not in p.parts and ".git" not in p.parts
)

# The hostile texts of tests/security and YAML's corners where YAML 1.1 (PyYAML) and 1.2 (ruamel) differ.
CORNERS = [
    "[" * 10_000 + "]" * 10_000,
    "- " * 5_000 + "x\n",
    "- " * (MAX_DEPTH + 1) + "x\n",
    "- " * MAX_DEPTH + "x\n",
    "a: &x [1, 2]\nb: *x\n",
    "a: &x 1\n",
    "a: !!str 5\nb: !custom x\n",
    "%YAML 1.1\n---\na: yes\n",
    "a: 1\n---\nb: 2\n",
    "a: 1\na: 2\n",
    "#: yes\n|- #\n",  # ruamel.yaml's scanner fails its own assert on it: a finding, not a traceback
    "? [a, b]\n: c\n",
    "{[a]: b}\n",
    "",
    "# only a comment\n",
    "- a\n- b\n",
    "just text\n",
    "a: yes\nb: no\nc: on\nd: off\ne: y\nf: n\n",
    "a: 0777\nb: 0o17\nc: 0x1F\nd: 0b101\ne: 1_000\nf: +5\ng: -0\nh: 012\n",
    "a: 1.5\nb: 1e3\nc: .5\nd: -.inf\ne: .nan\nf: 1.\ng: 1_0.5\nh: 6.02E+23\ni: 01.5\nj: -2.5e-3\n",
    "a: 2024-01-01\nb: 2001-12-14t21:59:43.10-05:00\nc: 1:20\nd: 1.0.0\ne: '1.0'\n",
    "a: ~\nb: null\nc: Null\nd: NULL\ne:\nf: ''\ng: \"\"\n",
    "a: true\nb: False\nc: TRUE\nd: tRuE\n",
    "1: a\ntrue: b\nnull: c\n2.5: d\n",
    "<<: {a: 1}\nb: =\n",
    "a: |\n  line one\n  line two\n\nb: >\n  folded\n  text\n\n\nc: |-\n  keep\nd: >+\n  kept\n\n",
    "a: \"tab\\tnew\\nline \\u00e9 \\x41 \\/\"\nb: 'it''s'\n",
    "a: 1\r\nb:\r\n  - 2\r\n  - x\r\n",
    "a: 1\x85b: 2\n",
    "a: 1\u2028b: 2\n",
    "\ufeffa: 1\n",
    "a:\tb\n",
    "a: b\x07\n",
    'a: "\\ud800"\n',
    "a: [1, 2,\n  3]\nb: {c: d,\n  e: f}\n",
    "a:\n- 1\n-  - 2\n   - 3\n",
    "a: b: c\n",
    "a: 'unterminated\n",
    "a:\n  b: 1\n c: 2\n",
    "plain multi\n  line scalar: x\n",
    "a: plain\n  continued\n",
    '{"manifest_version": 1, "release": {"name": "x", "version": "1.0.0"}, "n": [1, 2.0, -3e2, true, null]}',
    "a: é ü 中文 😀\n",
    "- [a, b]: c\n",
    "a: -\nb: - x\n",
    "a: 'x' # comment\n# comment\nb: [1, # c\n 2]\n",
]


def _same(text: str) -> tuple[Any, Any]:
    """Parse with both; assert the same findings, data and lines; return both trees."""
    fast, fast_found = parse_marked(text, "bundle.yaml")
    slow, slow_found = parse_text(text, "bundle.yaml")
    assert [(f.id, f.message, f.line) for f in fast_found] == [(f.id, f.message, f.line) for f in slow_found]
    assert (fast is None) == (slow is None)
    if slow is None:
        return fast, slow
    data = plain_data(fast)
    assert _comparable(data) == _comparable(to_plain(slow))
    quick, round_trip = Manifest(data, "bundle.yaml", fast), Manifest(data, "bundle.yaml", slow)
    for keys in _paths(data):
        assert quick.line(*keys) == round_trip.line(*keys), keys
    return fast, slow


def _comparable(data: Any) -> str:
    """JSON text, types kept apart (1 and 1.0 and True differ), NaN made equal to itself."""

    def tag(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: tag(v) for k, v in node.items()}
        if isinstance(node, list):
            return [tag(v) for v in node]
        if isinstance(node, float) and math.isnan(node):
            return "float:nan"
        return f"{type(node).__name__}:{node!r}"

    return json.dumps(tag(data))


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, sub in node.items():
            out += _paths(sub, (*prefix, key))
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            out += _paths(sub, (*prefix, i))
    return out


def test_the_repository_has_manifests_to_compare() -> None:
    assert EXAMPLE / "bundle.yaml" in REPO_MANIFESTS


@pytest.mark.parametrize("path", REPO_MANIFESTS, ids=lambda p: str(p.relative_to(REPO)))
def test_repository_manifests_load_alike_and_take_the_fast_path(path: Path) -> None:
    fast, _ = _same(path.read_text(encoding="utf-8-sig"))
    assert isinstance(fast, MarkedMap)  # libyaml parsed it: the plain case is the fast one


@pytest.mark.parametrize("text", CORNERS, ids=range(len(CORNERS)))
def test_awkward_and_hostile_texts_load_alike(text: str) -> None:
    _same(text)


def test_a_manifest_of_many_cases_takes_the_fast_path_with_the_same_lines() -> None:
    cases = [{"name": f"case-{i}", "tags": ["edge"], "inputs": {"x": f"c/{i}.npy"}} for i in range(300)]
    for text in (yaml.safe_dump({"cases": cases}), json.dumps({"cases": cases}, indent=2)):
        fast, _ = _same(text)
        assert isinstance(fast, MarkedMap)
        assert Manifest(to_plain(fast), "bundle.yaml", fast).line("cases", 299, "inputs", "x") is not None


scalars = st.sampled_from(
    ["yes", "no", "on", "1", "01", "0o7", "0x1", "1_0", "1.5", ".5", "1e3", "-1", "+1", "~", "null", "true",
     "False", "2024-01-01", "1.0.0", "=", "<<", "a b", "'q'", '"d"', "-", "?", ":", "#", "|", ">", "&a", "*a",
     "!t", "[", "]", "{", "}", ",", "é", "\t", ""]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.tuples(st.integers(0, 3), scalars, st.sampled_from([": ", ": ", "- ", ""]), scalars)))
def test_generated_yaml_loads_alike(parts: list[tuple[int, str, str, str]]) -> None:
    _same("".join(f"{'  ' * indent}{a}{sep}{b}\n" for indent, a, sep, b in parts))


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_arbitrary_text_loads_alike(text: str) -> None:
    _same(text)


# ----- over MAX_DOUBTFUL_BYTES: the libyaml pass alone decides, with ruamel's words for a bound's refusal

# Costly texts that both parsers read alike up to the refusal: the refusal's id, words and line must be the same
# whichever decides (ruamel.yaml under the bound, libyaml alone over it).
REFUSED = {
    "anchor": "a: 1\nb:\n  c: &x [1, 2]\n",
    "alias": "a: 1\nb: [1, 2]\nc:\n  - d: *x\n",
    "anchored mapping": "a:\n  - &x {b: 1}\n",
    "complex key, explicit": "a: 1\n? [a, b]\n: c\n",
    "complex key, flow": "a: 1\nb: {[a]: b}\n",
    "complex key, implicit": "a:\n  - [a, b]: c\n",
    "complex key, mapping": "a:\n  ? {x: 1}\n  : 2\n",
    "deep flow": "a: 1\nb: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
    "deep block": "a:\n" + "".join(f"{'  ' * d}k{d}:\n" for d in range(1, MAX_DEPTH + 1)) + "  " * 65 + "k: 1\n",
    "very deep": "[" * 10_000 + "]" * 10_000,
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_libyaml_alone_refuses_as_ruamel_does(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _, ruamel = parse_text(text, "bundle.yaml")
    assert [f.id for f in ruamel] == ["manifest.parse"] and "not valid YAML" not in ruamel[0].message
    monkeypatch.setattr(yamltree, "MAX_DOUBTFUL_BYTES", 0)
    tree, alone = parse_marked(text, "bundle.yaml")
    assert tree is None
    assert [(f.id, f.message, f.line) for f in alone] == [(f.id, f.message, f.line) for f in ruamel]


def test_the_node_count_is_refused_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamltree, "MAX_NODES", 1000)
    text = "a: 1\nx: [" + ",".join(["1"] * 1200) + "]\n"
    _, ruamel = parse_text(text, "bundle.yaml")
    monkeypatch.setattr(yamltree, "MAX_DOUBTFUL_BYTES", 0)
    _, alone = parse_marked(text, "bundle.yaml")
    expected = [("more than 1000 YAML nodes", None)]
    assert [(f.message, f.line) for f in alone] == [(f.message, f.line) for f in ruamel] == expected


@pytest.mark.parametrize("text", CORNERS, ids=range(len(CORNERS)))
def test_over_the_bound_both_readers_still_agree(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over MAX_DOUBTFUL_BYTES `parse_text` asks the libyaml pass first, so `checker lock` refuses what verify does."""
    monkeypatch.setattr(yamltree, "MAX_DOUBTFUL_BYTES", 0)
    _same(text)


# What only ruamel.yaml could settle, and so, over the bound, is the finding, at the line it is on.
DOUBTS = {
    "a: 1\nb: !!str 5\n": ("the YAML tag 'tag:yaml.org,2002:str'", 2),
    "a: 1\nb:\n  c: !custom {d: 1}\n": ("the YAML tag '!custom'", 3),
    "%YAML 1.1\n---\na: yes\n": ("a %YAML or %TAG directive", 1),
    "a: 1\n---\nb: 2\n": ("a second YAML document", 2),
    "a: 1\nb: 2\na: 3\n": ("the key 'a' a second time", 3),
    "a: 1\n2.5: d\n": ("a number as a key", 2),
    "a: 1\nb: [1, 0o17]\n": ("the unquoted value '0o17'", 2),
    "a:\n  b: 2024-01-01\n": ("the unquoted value '2024-01-01'", 2),
    "a: 1\n<<: {b: 1}\n": ("the unquoted value '<<'", 2),
}


@pytest.mark.parametrize(("text", "expected"), DOUBTS.items(), ids=range(len(DOUBTS)))
def test_over_the_bound_a_doubt_is_the_finding_at_its_line(
    text: str, expected: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parse_text(text, "bundle.yaml")[0] is not None or parse_text(text, "bundle.yaml")[1]  # ruamel reads it
    monkeypatch.setattr(yamltree, "MAX_DOUBTFUL_BYTES", 0)
    words, line = expected
    for parse in (parse_marked, parse_text):
        tree, found = parse(text, "bundle.yaml")
        assert tree is None and [(f.id, f.line) for f in found] == [("manifest.parse", line)], found
        assert words in found[0].message and "must be plain YAML or JSON" in found[0].message


def test_over_the_bound_a_syntax_error_is_libyamls_at_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamltree, "MAX_DOUBTFUL_BYTES", 0)
    tree, found = parse_marked("a: 1\nb: [1, 2\nc: 3\n", "bundle.yaml")
    assert tree is None and found[0].message.startswith("not valid YAML: ") and found[0].line == 3


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.tuples(st.integers(0, 3), scalars, st.sampled_from([": ", ": ", "- ", "", "? "]), scalars)))
def test_generated_yaml_over_the_bound_loads_alike(parts: list[tuple[int, str, str, str]]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(yamltree, "MAX_DOUBTFUL_BYTES", 0)
        _same("".join(f"{'  ' * indent}{a}{sep}{b}\n" for indent, a, sep, b in parts))
