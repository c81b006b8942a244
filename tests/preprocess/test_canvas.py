"""A browser canvas's drawImage as a resize filter (`library: canvas`), held to Chromium drawing the same photo."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from enginekit import canvas_draw
from prepkit import bundle_maker, photo, pixels

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.platforms.browser import chromium
from checker.preprocess.image.resample import resize_with

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
SIZES = [(24, 32), (100, 150), (57, 43), (256, 300), (37, 37), (128, 128), (200, 77)]


@pytest.mark.parametrize("smoothing", [True, False])
def test_the_canvas_filter_draws_what_chromium_draws(smoothing: bool) -> None:
    image = pixels(photo("astronaut.png"))[::4, ::4]  # 128 x 128: shrunk, enlarged, and both at once below
    drawn = canvas_draw(np.ascontiguousarray(image), SIZES, smoothing)
    filt = "bilinear" if smoothing else "nearest"
    for size in SIZES:
        ours = resize_with(image, size, "canvas", filt, antialias=False)
        assert ours.dtype == np.uint8 and ours.shape == (*size, 3)
        assert np.array_equal(ours, drawn[size]), (size, filt)  # pixel for pixel


def test_a_tensor_a_web_application_resized_with_a_canvas_is_explained_as_such(tmp_path: Path) -> None:
    raw = photo("astronaut.png")
    steps = [{"resize": {"size": [45, 60]}}, {"scale": 1 / 255}, {"layout": "NCHW"}]
    drawn = canvas_draw(np.ascontiguousarray(pixels(raw)), [(45, 60)])[(45, 60)]
    stored = (drawn.astype(np.float32) / np.float32(255)).transpose(2, 0, 1)[None]
    entry = {"name": "x", "dtype": "float32", "shape": [1, 3, 45, 60],
             "preprocessing": {"kind": "image", "steps": steps}}  # fmt: skip
    ctx = bundle_maker(tmp_path)([entry], [{"name": "web", "inputs": {"x": stored}, "raw": {"x": raw}}])
    [found] = fidelity_stage(ctx)
    assert found.id == F.INPUTS_FIDELITY
    said = "when `resize` has `library: canvas, filter: bilinear` (the manifest has pillow, bilinear)"
    assert found.details["explanation"].startswith(said), found.details["explanation"]
    assert found.details["fits"][0]["edit"] == said and found.details["fits"][0]["exact"]
