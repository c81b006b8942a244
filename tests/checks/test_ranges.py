"""inputs.range: declared ranges, and the ranges that scale, mean and std (or an audio range) imply."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from prepkit import BundleMaker, bundle_maker, photo

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.checks.ranges import range_stage
from checker.context import Context

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
IMAGE = {"kind": "image", "scale": 1 / 255, "mean": MEAN, "std": STD}


@pytest.fixture
def make_bundle(tmp_path: Path) -> BundleMaker:
    return bundle_maker(tmp_path)


def ctx_for(make_bundle: BundleMaker, entry: dict, *arrays: np.ndarray) -> Context:
    cases = [{"name": f"c{i}", "inputs": {entry["name"]: a}} for i, a in enumerate(arrays)]
    return make_bundle([entry], cases)


def normalised(pixels: np.ndarray) -> np.ndarray:
    """NCHW pixels (0-255) through the ImageNet normalisation."""
    return ((pixels / 255 - np.array(MEAN)[:, None, None]) / np.array(STD)[:, None, None]).astype(np.float32)


def test_inside_the_declared_range(make_bundle: BundleMaker) -> None:
    entry = {"name": "x", "dtype": "float32", "range": [-1, 1], "preprocessing": {"kind": "custom", "description": "d"}}
    ctx = ctx_for(make_bundle, entry, np.linspace(-1, 1, 50, dtype=np.float32))
    assert list(range_stage(ctx)) == []


def test_outside_the_declared_range(make_bundle: BundleMaker) -> None:
    entry = {"name": "x", "dtype": "float32", "range": [0, 1], "preprocessing": {"kind": "custom", "description": "d"}}
    values = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    values[1, 2] = 254.0
    values[2, 3] = np.nan
    ctx = ctx_for(make_bundle, entry, np.linspace(0, 1, 5, dtype=np.float32), values)
    (finding,) = range_stage(ctx)
    assert finding.id == F.INPUTS_RANGE
    assert finding.message.startswith("case 'c1', input 'x': 2 of 12 values lie outside the declared range [0, 1]")
    assert "the first, at [1, 2], is 254" in finding.message
    assert finding.details["outside"] == 2
    assert finding.line == ctx.manifest.line("inputs", 0, "range")


def test_the_range_normalisation_implies_per_channel(make_bundle: BundleMaker) -> None:
    entry = {"name": "pixel_values", "dtype": "float32", "layout": "NCHW", "preprocessing": IMAGE}
    full = normalised(np.stack([np.zeros((3, 4, 4)), np.full((3, 4, 4), 255.0)]))  # both ends of 0-255
    assert list(range_stage(ctx_for(make_bundle, entry, full))) == []
    # Channel 0 allows [-2.118, 2.249]; 2.3 fits channel 2 ([-1.804, 2.640]) but not channel 0.
    wrong = full.copy()
    wrong[0, 0, 1, 1] = 2.3
    (finding,) = range_stage(ctx_for(make_bundle, entry, wrong))
    assert "the preprocessing implies (scale 0.00392157, mean [0.485, 0.456, 0.406]" in finding.message
    assert "none is declared" in finding.message
    assert "the first, at [0, 0, 1, 1], is 2.3, outside [-2.1179, 2.24891] for its channel" in finding.message
    assert finding.details["implied_by"].startswith("scale")
    assert finding.line == ctx_for(make_bundle, entry, wrong).manifest.line("inputs", 0, "preprocessing")


def test_0_255_tensor_against_the_implied_0_1_range(make_bundle: BundleMaker) -> None:
    entry = {
        "name": "image",
        "dtype": "float32",
        "layout": "NHWC",
        "preprocessing": {"kind": "image", "scale": 1 / 255},
    }
    pixels = np.arange(0, 256, dtype=np.float32).reshape(1, 16, 16, 1).repeat(3, axis=3)
    assert list(range_stage(ctx_for(make_bundle, entry, pixels / 255))) == []
    (finding,) = range_stage(ctx_for(make_bundle, entry, pixels))
    assert "outside the range [0, 1] the preprocessing implies" in finding.message


def test_a_declared_range_wins_over_the_implied_one(make_bundle: BundleMaker) -> None:
    entry = {"name": "pixel_values", "dtype": "float32", "layout": "NCHW", "range": [-3, 3], "preprocessing": IMAGE}
    assert list(range_stage(ctx_for(make_bundle, entry, np.full((1, 3, 2, 2), 2.9, np.float32)))) == []


def test_audio_sample_range(make_bundle: BundleMaker) -> None:
    entry = {"name": "wave", "dtype": "float32", "preprocessing": {"kind": "audio", "range": [-1, 1]}}
    (finding,) = range_stage(ctx_for(make_bundle, entry, np.array([[0.5, -1.5]], np.float32)))
    assert "[-1, 1] the preprocessing implies (preprocessing.range" in finding.message


def test_nothing_to_check_against(make_bundle: BundleMaker) -> None:
    entry = {"name": "ids", "dtype": "int64", "preprocessing": {"kind": "text", "tokenizer": "tokenizer.json"}}
    ctx = ctx_for(make_bundle, entry, np.array([[1, 5000]]))
    assert list(range_stage(ctx)) == []
    ctx.cases = None
    entry["range"] = [0, 10]
    assert list(range_stage(ctx)) == []


# A block the range cannot be implied from: said once, by one stage


BROKEN = {**IMAGE, "mean": [0.5, 0.5]}  # valid by the schema; two means do not fit RGB
PIXELS = {"name": "pixel_values", "dtype": "float32", "layout": "NCHW"}


def test_a_block_that_cannot_be_parsed_is_an_error_of_the_range_stage_without_raw_files(
    make_bundle: BundleMaker,
) -> None:
    ctx = ctx_for(make_bundle, {**PIXELS, "preprocessing": BROKEN}, np.zeros((1, 3, 2, 2), np.float32))
    (finding,) = range_stage(ctx)
    assert finding.id == F.INPUTS_FIDELITY
    assert finding.message.startswith("input 'pixel_values': the declared preprocessing cannot be applied")
    assert "mean has 2 values; RGB has 3 channel(s)" in finding.message
    assert finding.line == ctx.manifest.line("inputs", 0, "preprocessing")


def test_with_raw_files_the_fidelity_stage_alone_reports_the_block(make_bundle: BundleMaker) -> None:
    case = {"name": "c0", "inputs": {"pixel_values": np.zeros((1, 3, 2, 2), np.float32)}}
    ctx = make_bundle([{**PIXELS, "preprocessing": BROKEN}], [{**case, "raw": {"pixel_values": photo("chelsea.png")}}])
    assert list(range_stage(ctx)) == []
    (finding,) = fidelity_stage(ctx)
    assert finding.message.startswith("input 'pixel_values': the declared preprocessing cannot be applied")


def test_a_block_the_checker_cannot_follow_is_a_check_not_run(make_bundle: BundleMaker) -> None:
    torch_box = {**IMAGE, "resize": {"mode": "exact", "size": 4, "interpolation": "box", "library": "torch"}}
    ctx = ctx_for(make_bundle, {**PIXELS, "preprocessing": torch_box}, np.zeros((1, 3, 4, 4), np.float32))
    assert list(range_stage(ctx)) == []
    (not_run,) = ctx.not_run
    assert not_run.check == "range of input 'pixel_values'"
    assert "torch, which has no box interpolation" in not_run.reason


def test_the_block_is_parsed_once_for_both_stages(make_bundle: BundleMaker) -> None:
    config = {"do_resize": False, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": False}
    prep = {"kind": "image", "config": "preprocessor_config.json"}
    case = {"name": "c0", "inputs": {"pixel_values": np.zeros((1, 3, 2, 2), np.float32)}}
    case["raw"] = {"pixel_values": photo("chelsea.png")}
    ctx = make_bundle([{**PIXELS, "preprocessing": prep}], [case], {"preprocessor_config.json": json.dumps(config)})
    list(range_stage(ctx))
    assert ctx.preprocessing is not None
    parsed = ctx.preprocessing.spec("pixel_values")
    (ctx.root / "preprocessor_config.json").unlink()  # the fidelity stage must not read it again
    findings = list(fidelity_stage(ctx))
    assert ctx.preprocessing.spec("pixel_values") is parsed
    assert [f.id for f in findings] == [F.INPUTS_FIDELITY]  # the tensor differs; the config was not re-read
    assert "differs from the stored tensor" in findings[0].message or "has shape" in findings[0].message


def test_a_kind_that_implies_no_range_is_not_parsed_here(make_bundle: BundleMaker) -> None:
    prep = {"kind": "text", "tokenizer": "tokenizer.json", "padding": "max_length"}  # parsing needs max_length
    entry = {"name": "ids", "dtype": "int64", "preprocessing": prep}
    ctx = ctx_for(make_bundle, entry, np.array([[1, 2]]))
    assert list(range_stage(ctx)) == []
    assert ctx.preprocessing is not None and ctx.not_run == []
