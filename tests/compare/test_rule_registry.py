"""Every rule kind is a whole entry: a block in the manifest model (`AnyRule`: its parameters, their bounds,
defaults and words), an entry in `compare.metrics.CHECKS` (its figure, threshold, direction and wording), a
definition in each rule list of the committed manifest schema (baseline rules, variant rules, drift rules), and a
row in the rules table of docs/manifest.md naming its parameters. The check is shown to fail for each table."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checker.compare.metrics import CHECKS, Check
from checker.manifest.model.answers import ANSWER_RULES
from checker.manifest.model.rules import RULE_KINDS, RuleBase, parameters
from checker.manifest.schema import load

REPO = Path(__file__).resolve().parents[2]
DOCS = (REPO / "docs" / "manifest.md").read_text()


@dataclass(frozen=True)
class Tables:
    kinds: tuple[type[RuleBase], ...]  # the rule blocks the manifest model lists
    checks: Mapping[str, Check]  # the registry
    schema: list[dict[str, Any]]  # check name -> its `then` block, one mapping per rule list of the schema
    documented: dict[str, str]  # check name -> its parameters column in docs/manifest.md


def schema_rule_lists(node: object) -> list[dict[str, Any]]:
    """Each rule list of the manifest schema (baseline, variant and drift rules): check name -> its definition."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("title") == "Rule" and "allOf" in node:
            found.append({b["if"]["properties"]["check"]["const"]: b["then"] for b in node["allOf"]})
        for value in node.values():
            found += schema_rule_lists(value)
    elif isinstance(node, list):
        for value in node:
            found += schema_rule_lists(value)
    return found


def documented_checks() -> dict[str, str]:
    """The rules table of docs/manifest.md: each check's name and its parameters column."""
    start = DOCS.index("| check | parameters (defaults) |")
    table = DOCS[start : DOCS.index("\n\n", start)]
    return dict(re.findall(r"^\| `(\w+)` \| ([^|]*(?:\\\|[^|]*)*) \|", table, re.M))


def tables() -> Tables:
    return Tables(RULE_KINDS, CHECKS, schema_rule_lists(load("manifest")), documented_checks())


def missing(t: Tables) -> list[str]:
    """Every way a rule kind is not a whole entry, said as `name: what`."""
    out = []
    names = {kind.TAG for kind in t.kinds}
    for kind in t.kinds:
        name, check = kind.TAG, t.checks.get(kind.TAG)
        if check is None:
            out.append(f"{name}: no entry in compare.metrics.CHECKS")
        elif check.model is not kind:
            out.append(f"{name}: its CHECKS entry judges another block ({check.model.__name__})")
        for i, rules in enumerate(t.schema):
            if name not in rules:
                out.append(f"{name}: no definition in the schema's rule list {i}")
            elif set(rules[name]["properties"]) != {"check", *(f.name for f in kind.manifest_fields())}:
                out.append(f"{name}: the schema's rule list {i} states other parameters than its block")
        if name not in t.documented:
            out.append(f"{name}: no row in the rules table of docs/manifest.md")
        else:
            out += [
                f"{name}: docs/manifest.md does not name `{p}`"
                for p in parameters(kind)
                if f"`{p}`" not in t.documented[name]
            ]
    for name, check in t.checks.items():
        if check.model not in t.kinds:
            out.append(f"{name}: in CHECKS but its block is not in AnyRule")
        elif name != check.name:
            out.append(f"{name}: CHECKS names it, its block says '{check.name}'")
        if check.threshold_key is not None and check.threshold_key not in check.params:
            out.append(f"{name}: its threshold '{check.threshold_key}' is no parameter of its block")
    # The rules on answers share the union: their blocks are the answers' (tests/answers hold them to the schema).
    on_answers = {kind.TAG for kind in ANSWER_RULES}
    for i, rules in enumerate(t.schema):
        unknown = set(rules) - names - on_answers
        out += [f"{name}: in the schema's rule list {i} but no block" for name in sorted(unknown)]
    out += [f"{name}: documented but no block" for name in sorted(set(t.documented) - names)]
    return out


def test_every_rule_kind_is_a_whole_entry() -> None:
    t = tables()
    assert len(t.schema) == 3  # baseline rules, variant rules, drift rules
    assert missing(t) == []


def test_a_kind_missing_from_the_registry_is_named() -> None:
    t = tables()
    checks = {k: v for k, v in t.checks.items() if k != "sqnr"}
    assert missing(dataclasses.replace(t, checks=checks)) == ["sqnr: no entry in compare.metrics.CHECKS"]


def test_a_kind_missing_from_the_model_is_named() -> None:
    t = tables()
    kinds = tuple(k for k in t.kinds if k.TAG != "cosine")
    assert "cosine: in CHECKS but its block is not in AnyRule" in missing(dataclasses.replace(t, kinds=kinds))


@pytest.mark.parametrize("index", [0, 1, 2])
def test_a_kind_missing_from_a_schema_rule_list_is_named(index: int) -> None:
    t = tables()
    schema = [{k: v for k, v in rules.items() if not (i == index and k == "topk")} for i, rules in enumerate(t.schema)]
    assert missing(dataclasses.replace(t, schema=schema)) == [f"topk: no definition in the schema's rule list {index}"]


def test_a_kind_missing_from_the_docs_is_named() -> None:
    t = tables()
    documented = {k: v for k, v in t.documented.items() if k != "exact"}
    assert missing(dataclasses.replace(t, documented=documented)) == [
        "exact: no row in the rules table of docs/manifest.md"
    ]
    undocumented = {**t.documented, "topk": "`k` (1)"}
    assert "topk: docs/manifest.md does not name `min_agreement`" in missing(
        dataclasses.replace(t, documented=undocumented)
    )


def test_the_registry_takes_its_parameters_from_the_blocks() -> None:
    for name, check in CHECKS.items():
        taken = {p.name for p in parameters(check.model).values()}
        assert set(check.defaults) | set(check.required) | set(check.optional) == taken, name
        assert all(check.defaults[p] == parameters(check.model)[p].default for p in check.defaults)
    assert CHECKS["allclose"].defaults == {"atol": 1e-5, "rtol": 1e-3}
    assert CHECKS["score_drift"].required == ("max",) and CHECKS["topk"].optional == ("batch_axis",)
    assert [name for name, check in CHECKS.items() if check.task] == ["accuracy", "accuracy_drop"]
