"""`comparison:` and `variants:` as typed blocks: built from the example, absent and empty kept apart, and each
rule parameter's bounds one definition that the schema and the hand parser (compare.rules.parse_rule) share."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from bundlekit import EXAMPLE

from checker.compare.rules import RuleError, parse_rule
from checker.manifest import views
from checker.manifest.model.build import build
from checker.manifest.model.comparison import Case
from checker.manifest.model.root import Spec
from checker.manifest.model.rules import RULE_KINDS, AllClose, Param, RuleBase, ScoreDrift, TopK, parameters
from checker.manifest.model.variants import Variant
from checker.manifest.schema import validator

DATA = yaml.safe_load((EXAMPLE / "bundle.yaml").read_text())


def test_the_example_builds_typed_rules_variants_and_cases() -> None:
    spec = build(Spec, DATA)
    (rule, *_) = views.baseline_rules(spec)
    assert isinstance(rule, AllClose) and rule.check == "allclose" and rule.at == ("comparison", "rules", 0)
    assert rule.min_pass_rate == 1.0 and rule.tags is None  # a default, and an absent list
    (variant,) = views.variants(spec)
    assert isinstance(variant, Variant) and variant.at == ("variants", 0)
    assert variant.graph.at == ("variants", 0, "graph") and variant.transform.tool.endswith("quantize_static")
    kinds = [type(r) for r in variant.rules]
    assert kinds == [TopK, ScoreDrift] and variant.rules[1].at == ("variants", 0, "rules", 1)
    assert isinstance(variant.rules[1], ScoreDrift) and variant.rules[1].apply == "softmax"
    cases = views.cases(spec)
    assert all(isinstance(c, Case) for c in cases) and cases[0].at == ("comparison", "cases", 0)
    places = list(views.rules(spec))
    assert [(p.graph, p.against) for p in places][-1][0] == "int8"


def test_absent_and_empty_are_told_apart() -> None:
    data = copy.deepcopy(DATA)
    data["variants"][0]["drift_rules"] = []
    assert build(Spec, data).variants[0].drift_rules == []  # type: ignore[index]
    del data["variants"][0]["drift_rules"]
    assert build(Spec, data).variants[0].drift_rules is None  # type: ignore[index]
    assert views.drift_rules(build(Spec, data).variants[0]) == []  # type: ignore[index]
    del data["variants"]
    assert build(Spec, data).variants is None and views.variants(build(Spec, data)) == []


def test_many_cases_build_each_typed() -> None:
    data = copy.deepcopy(DATA)
    case = data["comparison"]["cases"][0]
    data["comparison"]["cases"] = [{**copy.deepcopy(case), "name": f"c{i}"} for i in range(10_000)]
    cases = views.cases(build(Spec, data))
    assert len(cases) == 10_000 and cases[-1].name == "c9999" and cases[-1].at == ("comparison", "cases", 9999)
    assert cases[-1].inputs == case["inputs"] and cases[-1].inputs is not case["inputs"]


def _within(p: Param) -> Any:
    """A value of the parameter's type inside its bounds."""
    if p.choices is not None:
        return p.choices[0]
    if p.type is bool:
        return True
    value = p.minimum if p.minimum is not None and p.minimum > -1e6 else 0
    return int(value) if p.type is int else float(value)


def _rule(kind: type[RuleBase], **params: Any) -> dict[str, Any]:
    required = {name: _within(p) for name, p in parameters(kind).items() if p.required}
    return {"output": "y", "check": kind.TAG, **required, **params}


def _schema_accepts(rule: dict[str, Any]) -> bool:
    data = {"manifest_version": 1, "release": {"name": "r", "version": "1"}, "comparison": {"rules": [rule]}}
    return not any(True for _ in validator("manifest").iter_errors(data))


def _parser_accepts(rule: dict[str, Any]) -> bool:
    try:
        parse_rule(rule)
    except RuleError:
        return False
    return True


BOUNDS = [
    (kind, p, side)
    for kind in RULE_KINDS
    for p in parameters(kind).values()
    for side in ("minimum", "maximum")
    if getattr(p, side) is not None
]


@pytest.mark.parametrize(("kind", "p", "side"), BOUNDS, ids=[f"{k.TAG}.{p.name}.{s}" for k, p, s in BOUNDS])
def test_the_schema_and_the_parser_share_each_bound(kind: type[RuleBase], p: Param, side: str) -> None:
    bound = getattr(p, side)
    at = int(bound) if p.type is int else float(bound)
    step = 1 if p.type is int else max(abs(at), 1.0)
    beyond = at - step if side == "minimum" else at + step
    assert _schema_accepts(_rule(kind, **{p.name: at})) and _parser_accepts(_rule(kind, **{p.name: at}))
    assert not _schema_accepts(_rule(kind, **{p.name: beyond}))
    assert not _parser_accepts(_rule(kind, **{p.name: beyond}))
