"""Every tensor step and every kind of answer is a whole entry: a kernel (a decoder), a one-edit entry, a block in
the manifest model and the schema, and a row in docs/answers.md; the check is shown to fail for each table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from checker.answers import tensors
from checker.answers.kinds import KINDS
from checker.manifest.model.answers import ANSWER_BLOCKS, ANSWER_KINDS, ANSWER_RULES, STEPS
from checker.preprocess.registry import Registry

REPO = Path(__file__).resolve().parents[2]
DOCS = (REPO / "docs" / "answers.md").read_text(encoding="utf-8")
SCHEMA = json.loads((REPO / "schemas" / "manifest.schema.json").read_text(encoding="utf-8"))


def section(title: str) -> str:
    start = DOCS.index(title + "\n")
    end = DOCS.find("\n## ", start + 1)
    return DOCS[start : end if end != -1 else None]


def first_column(title: str) -> set[str]:
    return set(re.findall(r"^\| `(\w+)` \|", section(title), re.M))


def schema_steps() -> set[str]:
    answers = SCHEMA["properties"]["answers"]["items"]["allOf"]
    steps = answers[0]["then"]["properties"]["steps"]["items"]["properties"]
    return set(steps)


def missing_steps(registry: Registry, documented: set[str], schema: set[str]) -> list[str]:
    out = []
    for step in registry.types:
        if step not in registry.kernels:
            out.append(f"{step.TAG}: no kernel")
        if step not in registry.changes:
            out.append(f"{step.TAG}: no one-edit entry (register NO_CHANGES for none)")
        if step.TAG not in documented:
            out.append(f"{step.TAG}: no row in docs/answers.md")
        if step.TAG not in schema:
            out.append(f"{step.TAG}: no schema definition")
    return out


def test_every_tensor_step_is_a_whole_entry() -> None:
    assert missing_steps(tensors.REGISTRY, first_column("## Tensor steps"), schema_steps()) == []


def test_the_step_check_names_what_is_missing() -> None:
    whole = tensors.REGISTRY
    pool = STEPS[5]
    no_kernel = Registry(
        "answer", whole.types, {k: v for k, v in whole.kernels.items() if k is not pool}, whole.changes
    )
    assert missing_steps(no_kernel, first_column("## Tensor steps"), schema_steps()) == ["pool: no kernel"]
    assert missing_steps(whole, first_column("## Tensor steps") - {"pool"}, schema_steps()) == [
        "pool: no row in docs/answers.md"
    ]
    assert missing_steps(whole, first_column("## Tensor steps"), schema_steps() - {"pool"}) == [
        "pool: no schema definition"
    ]


def missing_kinds(kinds: dict[str, object], documented: set[str], rules: set[str]) -> list[str]:
    out = []
    blocks = {b.TAG for b in ANSWER_BLOCKS}
    for name in ANSWER_KINDS:
        if name not in kinds:
            out.append(f"{name}: no decoder in answers.kinds.KINDS")
        if name not in blocks:
            out.append(f"{name}: no answer block")
        if name not in documented:
            out.append(f"{name}: no row in docs/answers.md")
        if name not in rules:
            out.append(f"{name}: no rule block")
    return out


def test_every_kind_is_a_whole_entry() -> None:
    rules = {r.TAG for r in ANSWER_RULES}
    assert missing_kinds(dict(KINDS), first_column("## Decoders, by kind"), rules) == []
    assert set(KINDS) == set(ANSWER_KINDS)
    for name, kind in KINDS.items():
        assert name == kind.rule.TAG
    assert first_column("## Rules on answers") == set(ANSWER_KINDS)


def test_the_kind_check_names_what_is_missing() -> None:
    rules = {r.TAG for r in ANSWER_RULES}
    documented = first_column("## Decoders, by kind")
    without = {k: v for k, v in KINDS.items() if k != "mask"}
    assert missing_kinds(without, documented, rules) == ["mask: no decoder in answers.kinds.KINDS"]
    assert missing_kinds(dict(KINDS), documented - {"text"}, rules) == ["text: no row in docs/answers.md"]
    assert missing_kinds(dict(KINDS), documented, rules - {"values"}) == ["values: no rule block"]


@pytest.mark.parametrize("kind", ANSWER_KINDS)
def test_each_kind_has_its_rule_in_the_schema(kind: str) -> None:
    rule = SCHEMA["properties"]["comparison"]["properties"]["rules"]["items"]
    assert kind in rule["properties"]["check"]["enum"]
    assert any(branch["if"]["properties"]["check"]["const"] == kind for branch in rule["allOf"])
