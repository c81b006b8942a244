"""Rules over several cases: parsing, NaN/infinity policy, pass rate, worst case and would_pass_at."""

from __future__ import annotations

import json

import numpy as np
import pytest

from checker.compare.messages import rule_failure
from checker.compare.rules import CaseResult, RuleError, evaluate_case, judge_rule, parse_rule, would_pass_at


def judge(raw: dict[str, object], pairs: dict[str, tuple[np.ndarray, np.ndarray]]):  # type: ignore[no-untyped-def]
    rule = parse_rule(raw)
    results = {name: evaluate_case(rule, a, e) for name, (a, e) in pairs.items()}
    return rule, results, judge_rule(rule, list(pairs), results, None)


def test_parse_fills_defaults() -> None:
    rule = parse_rule({"output": "y", "check": "allclose"})
    assert rule.params == {"atol": 1e-5, "rtol": 1e-3}
    assert rule.min_pass_rate == 1.0
    assert rule.threshold == 1e-5


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"output": "y", "check": "nearly"}, "unknown check 'nearly'"),
        ({"output": "y", "check": "max_abs"}, "needs 'max'"),
        ({"output": "y", "check": "max_abs", "max": 1, "atol": 2}, "no parameter 'atol'"),
        ({"output": "y", "check": "topk", "k": 0}, "'k' must be an integer >= 1"),
        ({"output": "y", "check": "topk", "k": True}, "'k' must be an integer"),
        ({"output": "y", "check": "score_drift", "max": 0.1, "apply": "tanh"}, "'apply' must be one of"),
        ({"output": "y", "check": "cosine", "min": "high"}, "finite number"),
        ({"output": "y", "check": "exact", "min_pass_rate": 2}, "'min_pass_rate' must lie in"),
        ({"check": "exact"}, "needs 'output'"),
        ("exact", "mapping"),
    ],
)
def test_parse_refuses_with_a_reason(raw: object, words: str) -> None:
    with pytest.raises(RuleError, match=words):
        parse_rule(raw)


def test_pass_rate_worst_case_and_order_statistic() -> None:
    e = np.zeros((1, 4))
    pairs = {f"c{i}": (e + d, e) for i, d in enumerate([0.01, 0.3, 0.02, 0.1])}
    _, _, result = judge({"output": "y", "check": "max_abs", "max": 0.05, "min_pass_rate": 0.75}, pairs)
    assert result.pass_rate == 0.5
    assert not result.passed
    assert result.worst_case == "c1"
    assert result.measured == pytest.approx(0.3)
    # Three of four cases must pass: the third-smallest figure is the threshold that just passes.
    assert result.would_pass_at == pytest.approx(0.1)
    assert result.cases["c0"] == pytest.approx(0.01)
    assert result.direction == "max"


def test_would_pass_at_for_a_min_direction_check() -> None:
    e = np.eye(4)
    pairs = {"a": (e, e), "b": (e[::-1], e), "c": (np.roll(e, 1, axis=1), e)}
    pairs["d"] = (np.where(np.arange(4)[:, None] < 2, e, e[::-1]), e)
    _, _, result = judge({"output": "y", "check": "topk", "min_pass_rate": 0.5}, pairs)
    assert [result.cases[k] for k in "abcd"] == [1.0, 0.0, 0.0, 0.5]
    assert result.direction == "min"
    assert result.would_pass_at == 0.5  # two of four cases agree on at least half their items
    assert result.worst_case == "b"


def test_nan_in_actual_fails_the_case_and_is_counted() -> None:
    e = np.ones((1, 3), np.float32)
    a = e.copy()
    a[0, 1] = np.nan
    _rule, results, result = judge({"output": "y", "check": "allclose"}, {"bad": (a, e), "ok": (e, e)})
    assert results["bad"] == CaseResult(None, False, results["bad"].note, nonfinite=1)
    assert "NaN or infinity at 1 element" in (results["bad"].note or "")
    assert result.worst_case == "bad"
    assert result.measured is None
    assert result.would_pass_at is None


def test_matching_nan_and_infinity_are_accepted() -> None:
    e = np.array([[np.nan, np.inf, -np.inf, 1.0]])
    for raw in (
        {"check": "allclose"},
        {"check": "exact"},
        {"check": "sqnr"},
        {"check": "mean_abs", "max": 0},
    ):
        _, _results, result = judge({"output": "y", **raw}, {"c": (e.copy(), e)})
        assert result.passed, raw
    _, _, result = judge({"output": "y", "check": "topk", "k": 1}, {"c": (e.copy(), e)})
    assert result.passed


def test_expected_nan_not_reproduced_fails() -> None:
    e = np.array([[np.nan, 1.0]])
    a = np.array([[0.0, 1.0]])
    _, results, result = judge({"output": "y", "check": "max_abs", "max": 1.0}, {"c": (a, e)})
    assert not result.passed
    assert "does not reproduce the expected NaN" in (results["c"].note or "")
    inf_sign = judge(
        {"output": "y", "check": "max_abs", "max": 1.0}, {"c": (-np.array([[np.inf]]), np.array([[np.inf]]))}
    )
    assert not inf_sign[2].passed


def test_shape_mismatch_and_bad_axis_are_notes_not_crashes() -> None:
    _, results, _result = judge({"output": "y", "check": "cosine"}, {"c": (np.zeros((1, 3)), np.zeros((1, 4)))})
    assert "shape [1, 3] differs from the expected [1, 4]" in (results["c"].note or "")
    _, results, _ = judge({"output": "y", "check": "topk", "axis": 3}, {"c": (np.zeros((1, 3)), np.zeros((1, 3)))})
    assert "axis 3 does not exist" in (results["c"].note or "")
    _, results, _ = judge({"output": "y", "check": "topk", "k": 5}, {"c": (np.zeros((1, 3)), np.zeros((1, 3)))})
    assert "k=5 exceeds the 3 entries" in (results["c"].note or "")
    _, results, _ = judge({"output": "y", "check": "sqnr"}, {"c": (np.array(["a"]), np.array(["a"]))})
    assert "cannot be compared" in (results["c"].note or "")


def test_overflowing_difference_is_unmeasured() -> None:
    big = np.array([1e308, -1e308])
    _, results, _ = judge({"output": "y", "check": "max_abs", "max": 1.0}, {"c": (big, -big)})
    assert results["c"].figure is None
    assert "overflows" in (results["c"].note or "")


def test_integer_outputs_exact() -> None:
    e = np.array([[101, 7, 2]], np.int64)
    _, _, result = judge({"output": "ids", "check": "exact"}, {"same": (e.copy(), e), "off": (e + 1, e)})
    assert result.cases == {"same": 0.0, "off": 3.0}
    assert not result.passed
    assert result.would_pass_at == 3.0


def test_min_pass_rate_zero_still_reports_a_threshold() -> None:
    rule = parse_rule({"output": "y", "check": "max_abs", "max": 0.0, "min_pass_rate": 0.0})
    assert would_pass_at(rule, [0.2, 0.1]) == 0.1


def test_report_is_strict_json_even_for_identical_outputs() -> None:
    e = np.ones((2, 3))
    _, _, result = judge({"output": "y", "check": "sqnr"}, {"c": (e, e)})
    text = json.dumps(result.to_dict(), allow_nan=False)
    assert '"measured": 200.0' in text


def test_failure_message_names_everything() -> None:
    e = np.array([[4.0, 1.0, 0.0]])
    pairs = {"dim-dog": (np.array([[3.0, 1.0, 0.0]]), e), "cat": (e.copy(), e)}
    _, results, result = judge({"output": "logits", "check": "score_drift", "max": 0.05, "apply": "softmax"}, pairs)
    notes = {n: r.note for n, r in results.items() if r.note}
    text = rule_failure("int8", "reference", result, notes)
    assert text.startswith("int8: rule logits/score_drift failed: worst case 'dim-dog' changed the top score by 0.")
    assert "1/2 cases failed (pass rate 0.5 < 1)" in text
    assert "would pass at" not in text and result.would_pass_at is not None  # kept in the report, not worded


def test_failure_message_when_the_worst_case_is_unmeasured() -> None:
    e = np.ones((1, 2))
    pairs = {"nan": (np.array([[np.nan, 1.0]]), e)}
    _, results, result = judge({"output": "y", "check": "cosine"}, pairs)
    text = rule_failure("baseline", "reference", result, {n: r.note for n, r in results.items() if r.note})
    assert "worst case 'nan' holds NaN or infinity" in text
    assert "would pass" not in text and result.would_pass_at is None  # the report says no threshold would
