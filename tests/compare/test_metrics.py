"""Each check's per-case figure on crafted arrays with known answers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from checker.compare import metrics as M


def params(check: str, **given_params: object) -> dict[str, object]:
    return {**M.CHECKS[check].defaults, **given_params}


def allclose_passes(a: np.ndarray, e: np.ndarray, p: dict[str, object]) -> bool:
    return M.CHECKS["allclose"].passes(M.allclose_figure(M.Pair(a, e), p), p)


def test_allclose_is_numpys_additive_definition_not_absolute_and_relative() -> None:
    e = np.array([1.0, 100.0])
    a = np.array([1.0015, 100.0])
    p = params("allclose", atol=1e-3, rtol=1e-3)
    # NumPy: |a - e| <= atol + rtol*|e|: 0.0015 <= 0.002 passes, although it exceeds atol and rtol*|e| each.
    assert allclose_passes(a, e, p)
    assert np.allclose(a, e, rtol=1e-3, atol=1e-3)
    assert not np.all((np.abs(a - e) <= 1e-3) & (np.abs(a - e) <= 1e-3 * np.abs(e)))
    # The figure is the smallest atol that passes at rtol 1e-3: 0.0015 - 0.001.
    assert M.allclose_figure(M.Pair(a, e), p) == pytest.approx(0.0005)


def test_allclose_is_asymmetric_in_expected() -> None:
    p = params("allclose", atol=0.0, rtol=0.1)
    assert allclose_passes(np.array([10.0]), np.array([11.0]), p)  # 1 <= 0.1 * 11
    assert not allclose_passes(np.array([10.0]), np.array([9.0]), p)  # 1 > 0.1 * 9


def test_allclose_figure_floors_at_zero() -> None:
    assert M.allclose_figure(M.Pair(np.array([1.0]), np.array([1.0])), params("allclose")) == 0.0


@given(
    hnp.arrays(np.float64, 8, elements=st.floats(-1e3, 1e3)),
    hnp.arrays(np.float64, 8, elements=st.floats(-1e3, 1e3)),
    st.floats(0, 1),
)
@settings(max_examples=60, deadline=None)
def test_allclose_figure_is_the_atol_at_which_numpy_just_passes(a: np.ndarray, e: np.ndarray, rtol: float) -> None:
    p = params("allclose", rtol=rtol)
    need = M.allclose_figure(M.Pair(a, e), p)
    assert np.allclose(a, e, rtol=rtol, atol=need * (1 + 1e-9) + 1e-12)
    if need > 1e-9:
        assert not np.allclose(a, e, rtol=rtol, atol=need * (1 - 1e-6))


def test_max_and_mean_abs() -> None:
    a, e = np.array([[1.0, 2.0, 3.0]]), np.array([[1.5, 2.0, 2.0]])
    assert M.max_abs_figure(M.Pair(a, e), {}) == pytest.approx(1.0)
    assert M.mean_abs_figure(M.Pair(a, e), {}) == pytest.approx(0.5)


def test_cosine_is_the_lowest_over_batch_items() -> None:
    e = np.array([[1.0, 0.0], [1.0, 1.0]])
    a = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert M.cosine_figure(M.Pair(a, e), {}) == pytest.approx(1 / math.sqrt(2))


def test_cosine_of_zero_vectors() -> None:
    zero, one = np.zeros((1, 3)), np.ones((1, 3))
    assert M.cosine_figure(M.Pair(zero, zero), {}) == 1.0
    assert M.cosine_figure(M.Pair(zero, one), {}) == 0.0
    assert M.cosine_figure(M.Pair(one, zero), {}) == 0.0


def test_cosine_of_huge_values_stays_finite() -> None:
    e = np.full((1, 4), 1e300)
    assert M.cosine_figure(M.Pair(e, e), {}) == pytest.approx(1.0)


def test_cosine_rank_one_is_a_single_item() -> None:
    assert M.cosine_figure(M.Pair(np.array([1.0, 0.0]), np.array([0.0, 1.0])), {}) == pytest.approx(0.0)


def test_sqnr_known_value_and_caps() -> None:
    e = np.array([3.0, 4.0])  # norm 5
    a = e + np.array([0.05, 0.0])  # noise 0.05: ratio 100 -> 40 dB
    assert M.sqnr_figure(M.Pair(a, e), {}) == pytest.approx(40.0)
    assert M.sqnr_figure(M.Pair(e, e), {}) == M.SQNR_CAP_DB
    assert M.sqnr_figure(M.Pair(np.ones(2), np.zeros(2)), {}) == -M.SQNR_CAP_DB
    assert M.sqnr_figure(M.Pair(np.zeros(2), np.zeros(2)), {}) == M.SQNR_CAP_DB


def test_topk_agreement_share() -> None:
    e = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]])
    a = np.array([[0.2, 0.7, 0.1], [0.1, 0.8, 0.1]])
    assert M.topk_figure(M.Pair(a, e), params("topk")) == pytest.approx(0.5)


def test_topk_ties_agree_when_some_choice_makes_the_sets_equal() -> None:
    e = np.array([[0.5, 0.5, 0.1]])  # the top 1 is either class 0 or class 1
    assert M.topk_figure(M.Pair(np.array([[0.4, 0.6, 0.1]]), e), params("topk")) == 1.0
    assert M.topk_figure(M.Pair(np.array([[0.6, 0.4, 0.1]]), e), params("topk")) == 1.0
    assert M.topk_figure(M.Pair(np.array([[0.1, 0.2, 0.7]]), e), params("topk")) == 0.0
    # Two classes are surely in the expected top 2 and only one of them in the actual's.
    assert M.topk_figure(M.Pair(np.array([[0.9, 0.1, 0.1]]), np.array([[0.9, 0.8, 0.1]])), params("topk", k=2)) == 1.0
    assert M.topk_figure(M.Pair(np.array([[0.9, 0.0, 0.8]]), np.array([[0.9, 0.8, 0.1]])), params("topk", k=2)) == 0.0


def test_topk_along_another_axis() -> None:
    e = np.zeros((1, 3, 2))
    e[0, 2, :] = 1.0
    a = e.copy()
    a[0, 0, 1] = 2.0
    assert M.topk_figure(M.Pair(a, e), params("topk", axis=1)) == pytest.approx(0.5)


def test_score_drift_on_the_expected_top_class_after_softmax() -> None:
    e = np.array([[2.0, 0.0]])
    a = np.array([[1.0, 0.0]])
    drift = M.score_drift_figure(M.Pair(a, e), params("score_drift", max=0.1, apply="softmax"))
    expected = 1 / (1 + math.exp(-2.0)) - 1 / (1 + math.exp(-1.0))
    assert drift == pytest.approx(expected)
    assert M.score_drift_figure(M.Pair(a, e), params("score_drift", max=0.1)) == pytest.approx(1.0)


def test_score_drift_sigmoid_is_stable_for_large_scores() -> None:
    e = np.array([[800.0, -800.0]])
    assert M.score_drift_figure(M.Pair(e, e), params("score_drift", max=0.1, apply="sigmoid")) == 0.0


def test_exact_counts_differences() -> None:
    assert M.exact_figure(M.Pair(np.array([1, 2, 3]), np.array([1, 5, 4])), {}) == 2.0
    assert M.exact_figure(M.Pair(np.array(["a", "b"]), np.array(["a", "b"])), {}) == 0.0


def test_directions_and_thresholds() -> None:
    assert M.CHECKS["cosine"].passes(0.9995, params("cosine"))
    assert not M.CHECKS["sqnr"].passes(29.0, params("sqnr"))
    assert M.CHECKS["exact"].threshold({}) == 0.0
    assert not M.CHECKS["exact"].passes(1.0, {})


@given(
    hnp.arrays(np.float64, 6, elements=st.floats(-10, 10)),
    hnp.arrays(np.float64, 6, elements=st.floats(-10, 10)),
    st.floats(0, 2),
    st.floats(0, 0.5),
)
@settings(max_examples=80, deadline=None)
def test_pass_decision_agrees_with_numpy(a: np.ndarray, e: np.ndarray, atol: float, rtol: float) -> None:
    p = params("allclose", atol=atol, rtol=rtol)
    if abs(M.allclose_figure(M.Pair(a, e), p) - atol) > 1e-9:  # away from the rounding boundary
        assert allclose_passes(a, e, p) == np.allclose(a, e, rtol=rtol, atol=atol)


def test_chunked_reductions_match_whole_array_numpy() -> None:
    rng = np.random.default_rng(0)
    e = rng.normal(0, 1, (3, M.CHUNK + 123)).astype(np.float32)
    a = (e + rng.normal(0, 0.01, e.shape)).astype(np.float32)
    pair = M.Pair(a, e)
    d = np.abs(a - e)
    assert pair.diff_stats[0] == pytest.approx(float(d.max()))
    assert pair.diff_stats[1] == pytest.approx(float(d.mean(dtype=np.float64)))
    assert pair.excess(0.01) == pytest.approx(float((d - np.float32(0.01) * np.abs(e)).max()), rel=1e-6)
    e64, a64 = e.astype(np.float64), a.astype(np.float64)
    want = 20 * math.log10(np.linalg.norm(e64) / np.linalg.norm(a64 - e64))
    assert pair.sqnr == pytest.approx(want, rel=1e-9)
    assert pair.diff_stats is pair.diff_stats  # computed once, shared by every rule on the output


def test_integer_outputs_are_compared_without_wrapping() -> None:
    a, e = np.array([0], np.uint8), np.array([255], np.uint8)
    assert M.max_abs_figure(M.Pair(a, e), {}) == 255.0


def _rule_schemas(node: object) -> list[dict[str, Any]]:
    """Every rule object in the manifest schema (baseline rules, variant rules, drift rules)."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("title") == "Rule" and "allOf" in node:
            found.append(node)
        for value in node.values():
            found += _rule_schemas(value)
    elif isinstance(node, list):
        for value in node:
            found += _rule_schemas(value)
    return found


def test_the_schema_and_the_rule_registry_agree() -> None:
    from checker.manifest.model.answers import RULE_BY_CHECK
    from checker.manifest.schema import load

    # Rules on answers are the answers' models' (tests/answers/test_answers_schema.py holds them to the schema).
    every = set(M.CHECKS) | set(RULE_BY_CHECK)
    rules = _rule_schemas(load("manifest"))
    assert len(rules) >= 3  # baseline rules, variant rules, drift rules
    for rule in rules:
        assert set(rule["properties"]["check"]["enum"]) == every
        branches = {b["if"]["properties"]["check"]["const"]: b["then"] for b in rule["allOf"]}
        assert set(branches) == every
        kinds = {name: then for name, then in branches.items() if name in M.CHECKS}
        common = set.intersection(*(set(then["properties"]) for then in kinds.values()))
        for name, then in kinds.items():
            check = M.CHECKS[name]
            taken = set(check.defaults) | set(check.required) | set(check.optional)
            assert set(then["properties"]) - common == taken, name
            # `output` is required in each tensor rule's branch: a rule on an answer names `answer` instead.
            assert set(then.get("required", [])) == {"output", *check.required}, name


def test_every_rule_kind_words_its_figure() -> None:
    for check in M.CHECKS.values():
        params = {"rtol": 0.0, "k": 1, **check.defaults}
        assert "{v" in check.wording and check.wording.format(v=0.5, t=0.25, **params)
