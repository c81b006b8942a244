"""Memory in proportion to the work: a 7000 x 7100 greyscale PNG (49.7 megapixels, under the raw-image bound)
as the raw file of the shipped example's crop-and-normalize input. The NumPy allocations are counted with
tracemalloc (NumPy reports its buffers to it), so the bounds hold on any machine; no time is measured.

Before, the grey file became a 150 MB RGB array, then full-size float copies; the crop now cuts the file's own
pixels before they are converted, and an explanation that could only make another size is refused from the
sizes alone."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from prepkit import bundle_maker, photo, pixels

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.build import build_decoded
from checker.preprocess.image.decode import MAX_PIXELS, decode
from checker.preprocess.image.kind import KIND as IMAGE
from checker.preprocess.image.pipeline import Memo, Pixels, run
from checker.preprocess.image.resample import pillow_per_band
from checker.preprocess.image.steps import parse_steps

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
STEPS = [
    {"decode": {"mode": "RGB"}},
    {"crop": {"center": [32, 32]}},
    {"scale": 1 / 255},
    {"normalize": {"mean": MEAN, "std": STD}},
    {"layout": "NCHW"},
]
MIB = 1 << 20


@pytest.fixture(scope="module")
def large_grey(tmp_path_factory: pytest.TempPathFactory) -> Path:
    arr = np.zeros((7100, 7000), np.uint8)
    arr[::97], arr[:, ::89] = 200, 90
    arr[3540:3560, 3490:3510] = np.arange(400, dtype=np.uint8).reshape(20, 20)  # something in the centre
    path = tmp_path_factory.mktemp("large") / "large.png"
    Image.fromarray(arr, "L").save(path)
    return path


def peak(fn: object) -> int:
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def expected(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        w, h = im.size
        box = ((w - 32) // 2, (h - 32) // 2, (w - 32) // 2 + 32, (h - 32) // 2 + 32)
        rgb = np.asarray(im.crop(box).convert("RGB"), np.float32)
    return ((rgb * np.float32(1 / 255) - np.float32(MEAN)) / np.float32(STD)).transpose(2, 0, 1)[None]


def test_a_crop_of_a_large_grey_image_costs_the_crop(large_grey: Path) -> None:
    decoded = decode(large_grey, large_grey.name)
    out: list[np.ndarray] = []
    used = peak(lambda: out.append(run(parse_steps(STEPS), decoded, "NCHW", "float32")))
    assert used < 16 * MIB, f"{used / MIB:.0f} MiB"  # was 335 MiB: the 150 MB RGB array and its copies
    np.testing.assert_allclose(out[0], expected(large_grey), rtol=0, atol=1e-6)


# The shipped example's own preprocessing (examples/mobilenet-tiny), in its shorthand fields.
EXAMPLE = {
    "kind": "image",
    "color": "RGB",
    "resize": {"mode": "shorter_side", "size": 36, "interpolation": "bilinear"},
    "crop": {"mode": "center", "size": [32, 32]},
    "scale": 1 / 255,
    "mean": MEAN,
    "std": STD,
}


def test_the_examples_resize_of_a_large_grey_image_runs_on_its_one_band(large_grey: Path) -> None:
    decoded = decode(large_grey, large_grey.name)
    spec = IMAGE.parse(EXAMPLE, large_grey.parent)
    out: list[np.ndarray] = []
    used = peak(lambda: out.append(build_decoded(spec, decoded, "NCHW", "float32")))
    # was 335 MiB; the grey band is 50 MB, and Pillow hands it to NumPy through a bytes copy
    assert used < 128 * MIB, f"{used / MIB:.0f} MiB"
    with Image.open(large_grey) as im:  # what Pillow makes of the RGB image, the band repeated
        rgb = np.asarray(im.convert("RGB").resize((36, 37), Image.Resampling.BILINEAR), np.float64)
    want = ((rgb[2:34, 2:34] / 255 - MEAN) / STD).transpose(2, 0, 1)[None]
    np.testing.assert_allclose(out[0], want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("filt", ["bilinear", "nearest", "bicubic", "lanczos", "box", "hamming"])
def test_a_grey_file_resized_as_rgb_is_pillows_rgb_resize(filt: str) -> None:
    grey = photo("camera.png")  # 512 x 512, stored grey
    steps = [{"decode": {"mode": "RGB"}}, {"resize": {"size": [45, 70], "filter": filt}}, {"pad": {"to": [48, 72]}}]
    out = run(parse_steps(steps), decode(grey, grey.name), "HWC", "uint8")
    with Image.open(grey) as im:
        assert im.mode == "L"
        want = np.asarray(im.convert("RGB").resize((70, 45), getattr(Image.Resampling, filt.upper())))
    np.testing.assert_array_equal(out[1:46, 1:71], want)
    assert not out[0].any() and not out[:, 0].any()


def test_explaining_a_mismatch_on_a_large_image_stays_bounded(large_grey: Path, tmp_path: Path) -> None:
    entry = {"name": "x", "dtype": "float32", "shape": [1, 3, 32, 32], "layout": "NCHW"}
    entry["preprocessing"] = {"kind": "image", "steps": STEPS}
    stored = expected(large_grey)[:, ::-1].copy()  # the channels reversed: no edit of the steps explains it
    ctx = bundle_maker(tmp_path)([entry], [{"name": "c", "inputs": {"x": stored}, "raw": {"x": large_grey}}])
    found: list[object] = []
    used = peak(lambda: found.extend(fidelity_stage(ctx)))
    assert [getattr(f, "id", None) for f in found] == [F.INPUTS_FIDELITY]
    assert used < 400 * MIB, f"{used / MIB:.0f} MiB"  # was 1.3 GB: the image made float whole, without its crop


def test_a_raw_image_over_the_bound_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    Image.new("L", (8000, 7000)).save(path)  # 56 megapixels of zeros: a small file
    tracemalloc.start()
    try:
        with pytest.raises(PreprocessError, match=f"huge.png is 8000x7000 pixels, more than the {MAX_PIXELS}"):
            decode(path, "huge.png")
        used = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert used < 4 * MIB  # the header was read, not the pixels


# A phone's photograph: 8608 x 5776 (49.7 megapixels) in colour, as JPEG, made of a real photograph enlarged.
PHOTO_SIZE = (8608, 5776)


@pytest.fixture(scope="module")
def large_photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with Image.open(photo("astronaut.png")) as im:
        big = im.convert("RGB").resize(PHOTO_SIZE, Image.Resampling.BILINEAR)
    path = tmp_path_factory.mktemp("photo") / "photo.jpg"
    big.save(path, quality=90)
    return path


RESIZED = [
    {"decode": {"mode": "RGB"}},
    {"resize": {"shorter_side": 36, "filter": "bilinear"}},
    {"crop": {"center": [32, 32]}},
    {"scale": 1 / 255},
    {"normalize": {"mean": MEAN, "std": STD}},
    {"layout": "NCHW"},
]


def resized_expected(path: Path) -> np.ndarray:
    """What torchvision-style code writes in Pillow: convert, resize the shorter side to 36, centre crop."""
    with Image.open(path) as im:
        w, h = im.size
        size = (round(36 * w / h), 36) if w > h else (36, round(36 * h / w))
        small = np.asarray(im.convert("RGB").resize(size, Image.Resampling.BILINEAR), np.float32)
    top, left = (small.shape[0] - 32) // 2, (small.shape[1] - 32) // 2
    cut = small[top : top + 32, left : left + 32]
    return ((cut * np.float32(1 / 255) - np.float32(MEAN)) / np.float32(STD)).transpose(2, 0, 1)[None]


def test_a_resized_colour_photo_never_becomes_a_full_size_array(large_photo: Path) -> None:
    decoded = decode(large_photo, large_photo.name)
    out: list[np.ndarray] = []
    used = peak(lambda: out.append(run(parse_steps(RESIZED), decoded, "NCHW", "float32")))
    assert used < 4 * MIB, f"{used / MIB:.0f} MiB"  # the decode and the resize as one: read at 36 pixels
    np.testing.assert_allclose(out[0], resized_expected(large_photo), rtol=0, atol=1e-6)


def test_explaining_a_mismatch_on_a_large_colour_photo_stays_bounded(large_photo: Path, tmp_path: Path) -> None:
    entry = {"name": "x", "dtype": "float32", "shape": [1, 3, 32, 32], "layout": "NCHW"}
    entry["preprocessing"] = {"kind": "image", "steps": RESIZED}
    stored = np.full((1, 3, 32, 32), 9.0, np.float32)  # nothing explains it: the whole search runs
    ctx = bundle_maker(tmp_path)([entry], [{"name": "c", "inputs": {"x": stored}, "raw": {"x": large_photo}}])
    found: list[object] = []
    used = peak(lambda: found.extend(fidelity_stage(ctx)))
    assert [getattr(f, "id", None) for f in found] == [F.INPUTS_FIDELITY]
    # one full-size array at a time (150 MB) and a band beside it (237 MiB measured): never a second full-size
    # array, a float copy, nor the bytes Pillow hands NumPy whole (each another 150 MB)
    assert used < 300 * MIB, f"{used / MIB:.0f} MiB"


def test_a_large_decoded_image_is_let_go_and_read_again_the_same(large_photo: Path) -> None:
    decoded = decode(large_photo, large_photo.name)
    before = np.asarray(decoded.stored.crop((4000, 3000, 4064, 3064)))
    decoded.release()
    assert not decoded._held  # the 200 MB image is gone until it is asked for
    assert decoded.size(True) == PHOTO_SIZE and decoded.stored_mode == "RGB"
    assert not decoded._held  # the size and mode are known without reading the file again
    np.testing.assert_array_equal(np.asarray(decoded.stored.crop((4000, 3000, 4064, 3064))), before)
    small = decode(photo("astronaut.png"), "astronaut.png")
    small.release()
    assert small._held  # a small image is kept: reading it again would cost more than it holds


@pytest.mark.parametrize("filt", ["bilinear", "nearest", "bicubic", "lanczos", "box", "hamming"])
def test_a_colour_image_resized_band_by_band_is_pillows_colour_resize(filt: str) -> None:
    rgb = pixels(photo("astronaut.png"))
    with Image.open(photo("astronaut.png")) as im:
        want = np.asarray(im.convert("RGB").resize((333, 201), getattr(Image.Resampling, filt.upper())))
    np.testing.assert_array_equal(pillow_per_band(rgb, (201, 333), filt), want)
    np.testing.assert_array_equal(pillow_per_band(rgb[..., ::-1], (201, 333), filt), want[..., ::-1])


@pytest.mark.parametrize("order", [["BGR"], ["BGR", "RGB"]])
def test_a_decode_swapped_then_resized_is_the_swap_of_the_resize(order: list[str]) -> None:
    steps = [{"decode": {"mode": "RGB"}}, *({"convert": {"to": to}} for to in order)]
    steps.append({"resize": {"size": [45, 70], "filter": "bicubic"}})
    path = photo("chelsea.png")
    out = run(parse_steps(steps), decode(path, path.name), "HWC", "uint8")
    with Image.open(path) as im:
        want = np.asarray(im.convert("RGB").resize((70, 45), Image.Resampling.BICUBIC))
    np.testing.assert_array_equal(out, want[..., ::-1] if order[-1] == "BGR" else want)


def test_the_memo_keeps_a_crops_pixels_not_the_image_it_was_cut_from() -> None:
    whole = np.zeros((1, 2000, 2000, 3), np.uint8)
    memo = Memo()
    crop = whole[:, 10:42, 10:42]
    steps = parse_steps([{"decode": {"mode": "RGB"}}, {"crop": {"center": [32, 32]}}])
    assert not memo.put(steps, Pixels(crop, "RGB"))  # a copy was kept: the view may be written over
    kept = memo.get(steps)[1]
    assert kept is not None and kept.array.base is None and kept.array.nbytes == 32 * 32 * 3
    assert memo.put(steps[:1], Pixels(np.zeros((1, 8, 8, 3), np.uint8), "RGB"))  # its own pixels: kept as is
