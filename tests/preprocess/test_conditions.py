"""`when:` on resize, crop and pad, and `multiple_of_rounding`: how each limit is compared and each side rounded,
what the parser and the schema refuse, and the one-edit changes a condition has."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from prepkit import photo

from checker.manifest.schema import validator
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image import geometry
from checker.preprocess.image.condition import When, parse_when
from checker.preprocess.image.decode import decode
from checker.preprocess.image.pipeline import run
from checker.preprocess.image.steps import Resize, parse_steps

CHELSEA = photo("chelsea.png")  # 300 x 451


def build(steps: list[dict[str, Any]]) -> np.ndarray:
    return run(parse_steps(steps), decode(CHELSEA, CHELSEA.name), "HWC", "float32")


@pytest.mark.parametrize(
    ("when", "h", "w", "holds"),
    [
        ({"longer_side": {"gt": 960}}, 500, 960, False),  # gt is strict
        ({"longer_side": {"gt": 960}}, 961, 500, True),
        ({"longer_side": {"ge": 960}}, 500, 960, True),
        ({"shorter_side": {"lt": 32}}, 32, 900, False),
        ({"shorter_side": {"le": 32}}, 32, 900, True),
        ({"sum_of_sides": {"lt": 64}}, 20, 43, True),
        ({"sum_of_sides": {"lt": 64}}, 20, 44, False),
        ({"area": {"ge": 100}}, 10, 10, True),
        ({"height": {"ge": 32, "lt": 64}, "width": {"le": 320}}, 63, 320, True),  # every comparison must hold
        ({"height": {"ge": 32, "lt": 64}, "width": {"le": 320}}, 64, 320, False),
        ({"height": {"ge": 32, "lt": 64}, "width": {"le": 320}}, 40, 321, False),
    ],
)
def test_each_measure_and_comparison(when: dict[str, Any], h: int, w: int, holds: bool) -> None:
    assert parse_when(when, "when").holds(h, w) is holds


@pytest.mark.parametrize(
    ("when", "message"),
    [
        ({"long_side": {"gt": 1}}, r"when\.long_side: unknown field 'long_side'; did you mean 'longer_side'"),
        ({"height": {"above": 1}}, r"when\.height\.above: unknown field 'above'"),
        ({"height": {"gt": "1"}}, r"when\.height\.gt: '1' is not of type 'number'"),
        ({"height": {"gt": -1}}, r"when\.height\.gt: -1 is less than the minimum of 0"),
        ({}, r"when: \{\} should be non-empty"),
        ({"height": {}}, r"when\.height: \{\} should be non-empty"),
        ([1], r"when: \[1\] is not of type 'object'"),
    ],
)
def test_a_malformed_condition_is_named(when: Any, message: str) -> None:
    with pytest.raises(PreprocessError, match=message):
        parse_steps([{"pad": {"when": when, "at_least": [32, 32]}}])


def test_the_schema_refuses_what_the_parser_refuses() -> None:
    def errors(when: Any) -> list[str]:
        manifest = {"inputs": [{"name": "x", "preprocessing": {"kind": "image", "steps": [{"resize": when}]}}]}
        return [e.message for e in validator("manifest").iter_errors(manifest) if "when" in str(e.path)]

    assert errors({"scale": 1.0, "when": {"longer_side": {"gt": 960}}}) == []
    assert errors({"scale": 1.0, "when": {"long_side": {"gt": 960}}})
    assert errors({"scale": 1.0, "when": {"height": {"above": 1}}})


def test_a_step_whose_condition_fails_passes_the_image_unchanged() -> None:
    plain = build([{"decode": {}}])
    shrink = {"longer_side": 100, "library": "opencv"}
    assert build([{"resize": {**shrink, "when": {"longer_side": {"gt": 451}}}}]).shape == plain.shape
    assert build([{"resize": {**shrink, "when": {"longer_side": {"ge": 451}}}}]).shape == (67, 100, 3)
    padded = build([{"pad": {"at_least": [400, 400], "when": {"area": {"lt": 300 * 451}}}}])
    np.testing.assert_array_equal(padded, plain)
    assert build([{"crop": {"center": [10, 10], "when": {"height": {"le": 300}}}}]).shape == (10, 10, 3)


def test_multiple_of_rounding_rounds_the_exact_quotient() -> None:
    def size(h0: int, w0: int, **kw: Any) -> tuple[int, int]:
        return geometry.resize_size(Resize(scale=1.0, multiple_of=32, **kw), h0, w0)

    # 48 / 32 = 1.5 and 80 / 32 = 2.5: half to even gives 64 and 64, half up 64 and 96
    assert size(48, 80, multiple_of_rounding="half_even") == (64, 64)
    assert size(48, 80) == (64, 96)  # the step's rounding, half_up, by default
    assert size(48, 80, rounding="floor") == (32, 64)
    assert size(48, 80, rounding="floor", multiple_of_rounding="ceil") == (64, 96)
    assert size(10, 15, multiple_of_rounding="half_even") == (32, 32)  # never below one multiple
    # PaddleOCR's DetResizeForTest on 298 x 1192: int(298 * (960 / 1192)) is 239, then round(239 / 32) * 32
    shrink = Resize(longer_side=960, rounding="floor", arithmetic="float_scale_first", multiple_of=32)
    assert geometry.resize_size(shrink, 298, 1192) == (224, 960)
    with pytest.raises(PreprocessError, match="multiple_of_rounding needs multiple_of"):
        parse_steps([{"resize": {"scale": 1.0, "multiple_of_rounding": "floor"}}])


def test_the_condition_is_said_back_in_the_manifests_words() -> None:
    (_, pad) = parse_steps([{"pad": {"at_least": [32, 32], "when": {"sum_of_sides": {"lt": 64}}}}])
    assert pad.words() == "pad: {when: {sum_of_sides: {lt: 64}}, at_least: [32, 32], value: 0}"
    assert pad.data() == {"pad": {"when": {"sum_of_sides": {"lt": 64}}, "at_least": [32, 32], "value": 0}}
    assert parse_steps([pad.data()])[1] == pad


def test_the_edits_of_a_condition_in_order() -> None:
    when = When((("height", "ge", 32), ("width", "lt", 64)))
    assert [e.words() if e else None for e in when.edits()] == [
        "{height: {ge: 31}, width: {lt: 64}}",
        "{height: {ge: 33}, width: {lt: 64}}",
        "{height: {ge: 32}, width: {lt: 63}}",
        "{height: {ge: 32}, width: {lt: 65}}",
        "{height: {gt: 32}, width: {lt: 64}}",
        "{height: {ge: 32}, width: {le: 64}}",
        "{width: {lt: 64}}",
        "{height: {ge: 32}}",
    ]
    assert list(When((("area", "gt", 0),)).edits())[-1] is None  # its only comparison dropped: always runs
