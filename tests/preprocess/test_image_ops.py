"""Each image operation against a computation that does not go through checker.preprocess."""

from __future__ import annotations

import math
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from prepkit import photo, pixels

from checker.preprocess.errors import PreprocessError
from checker.preprocess.image import decode as decode_module
from checker.preprocess.image.build import build_image
from checker.preprocess.image.spec import ImageSpec, parse_image

CHELSEA = photo("chelsea.png")  # 300 x 451 RGB
ASTRONAUT = photo("astronaut.png")  # 512 x 512 RGB
CAMERA = photo("camera.png")  # 512 x 512 grey


def build(prep: dict, path: Path = CHELSEA, layout: str = "HWC", dtype: str = "float64") -> np.ndarray:
    return build_image(parse_image(prep), path, layout, dtype)


# An independent resampler, written from Pillow's documented convolution: for output pixel x the source centre
# is (x + 0.5) * scale; the filter is stretched by max(scale, 1) (antialiasing when shrinking); horizontal pass
# first, rounded to 8 bits, then vertical.


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.clip(1 - np.abs(x), 0, None)


def _cubic(x: np.ndarray, a: float = -0.5) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _lanczos(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0.0)


def _box(x: np.ndarray) -> np.ndarray:
    return ((x > -0.5) & (x <= 0.5)).astype(np.float64)


def _hamming(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 1, np.sinc(x) * (0.54 + 0.46 * np.cos(np.pi * x)), 0.0)


FILTERS = {
    "bilinear": (_triangle, 1.0),
    "bicubic": (_cubic, 2.0),
    "lanczos": (_lanczos, 3.0),
    "box": (_box, 0.5),
    "hamming": (_hamming, 1.0),
}


def _weights(n_in: int, n_out: int, name: str) -> np.ndarray:
    fn, support = FILTERS[name]
    scale = n_in / n_out
    stretch = max(scale, 1.0)
    out = np.zeros((n_out, n_in))
    for x in range(n_out):
        centre = (x + 0.5) * scale
        lo = max(int(centre - support * stretch + 0.5), 0)
        hi = min(int(centre + support * stretch + 0.5), n_in)
        src = np.arange(lo, hi)
        w = fn((src - centre + 0.5) / stretch)
        out[x, lo:hi] = w / w.sum()
    return out


def reference_resize(img: np.ndarray, h: int, w: int, name: str) -> np.ndarray:
    horizontal = np.einsum("ow,hwc->hoc", _weights(img.shape[1], w, name), img.astype(np.float64))
    horizontal = np.clip(np.floor(horizontal + 0.5), 0, 255)  # Pillow rounds half up
    vertical = np.einsum("oh,hwc->owc", _weights(img.shape[0], h, name), horizontal)
    return np.clip(np.floor(vertical + 0.5), 0, 255)


# Decode


@pytest.mark.parametrize(("tag", "turn"), [(3, 2), (6, -1), (8, 1)])
def test_exif_orientation_is_applied(tmp_path: Path, tag: int, turn: int) -> None:
    original = pixels(CHELSEA)
    path = tmp_path / "oriented.png"
    exif = Image.Exif()
    exif[0x0112] = tag
    Image.fromarray(original).save(path, exif=exif)
    got = build({}, path, "HWC", "uint8")
    np.testing.assert_array_equal(got, np.rot90(original, k=turn))


def test_colour_conversions() -> None:
    rgb = pixels(CHELSEA).astype(np.float64)
    np.testing.assert_array_equal(build({"color": "RGB"}), rgb)
    np.testing.assert_array_equal(build({"color": "BGR"}), rgb[..., ::-1])
    luma = rgb @ np.array([0.299, 0.587, 0.114])  # ITU-R 601-2
    grey = build({"color": "GRAY"})
    assert grey.shape == (300, 451, 1)
    assert np.abs(grey[..., 0] - luma).max() <= 1.0


def test_grey_photo_to_rgb_repeats_the_channel() -> None:
    grey = pixels(CAMERA, "L").astype(np.float64)
    got = build({"color": "RGB"}, CAMERA)
    np.testing.assert_array_equal(got, np.repeat(grey[..., None], 3, axis=2))


# Resize


def test_nearest_picks_the_source_pixel_under_each_centre() -> None:
    src = pixels(CHELSEA)
    got = build({"resize": {"mode": "exact", "size": [97, 130], "interpolation": "nearest"}})
    rows = np.floor((np.arange(97) + 0.5) * 300 / 97).astype(int)
    cols = np.floor((np.arange(130) + 0.5) * 451 / 130).astype(int)
    np.testing.assert_array_equal(got, src[rows][:, cols])


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic", "lanczos", "box", "hamming"])
@pytest.mark.parametrize("size", [[120, 181], [224, 224], [410, 600]])  # shrink, mixed, enlarge
def test_filters_match_the_convolution(interpolation: str, size: list[int]) -> None:
    got = build({"resize": {"mode": "exact", "size": size, "interpolation": interpolation}})
    want = reference_resize(pixels(CHELSEA), size[0], size[1], interpolation)
    assert got.shape == (*size, 3)
    assert np.abs(got - want).max() <= 1.0  # Pillow's fixed-point coefficients round a level differently
    assert np.mean(got != want) < 0.005


@pytest.mark.parametrize(
    ("resize", "shape"),
    [
        ({"mode": "shorter_side", "size": 256}, (256, 385)),  # 451 * 256 / 300 = 384.85
        ({"mode": "shorter_side", "size": 256, "rounding": "floor"}, (256, 384)),
        ({"mode": "longer_side", "size": 256}, (170, 256)),  # 300 * 256 / 451 = 170.29
        ({"mode": "fixed_height", "size": [32, 100]}, (32, 48)),  # 451 * 32 / 300 = 48.1
        ({"mode": "fixed_height", "size": [32, 40]}, (32, 40)),
        ({"mode": "exact", "size": 64}, (64, 64)),
        ({"mode": "none"}, (300, 451)),
    ],
)
def test_resize_modes_give_the_spec_sizes(resize: dict, shape: tuple[int, int]) -> None:
    got = build({"resize": {**resize, "interpolation": "bilinear"}})
    assert got.shape[:2] == shape
    want = reference_resize(pixels(CHELSEA), shape[0], shape[1], "bilinear")
    assert np.abs(got - want).max() <= 1.0


def test_shorter_side_on_a_portrait_image(tmp_path: Path) -> None:
    path = tmp_path / "portrait.png"
    Image.fromarray(np.rot90(pixels(CHELSEA))).save(path)  # 451 x 300
    assert build({"resize": {"mode": "shorter_side", "size": 150}}, path).shape[:2] == (226, 150)  # 225.5 up


# Crop and pad


def test_center_crop_takes_the_middle() -> None:
    got = build({"crop": {"mode": "center", "size": [200, 300]}})
    np.testing.assert_array_equal(got, pixels(CHELSEA)[50:250, 75:375])  # (300-200)//2, (451-300)//2


def test_center_crop_larger_than_the_image_pads_with_zeros(tmp_path: Path) -> None:
    img = np.arange(1, 16, dtype=np.uint8).reshape(3, 5)
    path = tmp_path / "small.png"
    Image.fromarray(img).save(path)
    got = build({"color": "GRAY", "crop": {"mode": "center", "size": [6, 4]}}, path)[..., 0]
    want = np.zeros((6, 4))
    want[2:5] = img[:, 0:4]  # as Hugging Face: ceil((6-3)/2) = 2 rows of zeros above
    np.testing.assert_array_equal(got, want)


def test_letterbox_fits_and_centres_with_the_pad_value() -> None:
    got = build({"pad": {"mode": "letterbox", "size": [320, 320], "value": 114}})
    assert got.shape == (320, 320, 3)
    inner_h = round(300 * 320 / 451)  # 213
    top = (320 - inner_h) // 2  # 53; the odd row goes to the bottom
    assert (got[:top] == 114).all() and (got[top + inner_h :] == 114).all()
    assert got.shape[0] - top - inner_h == top + 1
    want = reference_resize(pixels(CHELSEA), inner_h, 320, "bilinear")
    assert np.abs(got[top : top + inner_h] - want).max() <= 1.0


def test_letterbox_puts_the_odd_column_right(tmp_path: Path) -> None:
    path = tmp_path / "tall.png"
    Image.fromarray(np.full((10, 4), 200, np.uint8)).save(path)
    got = build({"color": "GRAY", "pad": {"mode": "letterbox", "size": [10, 9], "value": 7}}, path)[..., 0]
    assert (got[:, 2:6] == 200).all()
    assert (got[:, :2] == 7).all() and (got[:, 6:] == 7).all()


def test_bottom_right_pads_only_there() -> None:
    got = build({"pad": {"mode": "bottom_right", "size": [320, 480], "value": [1, 2, 3]}})
    np.testing.assert_array_equal(got[:300, :451], pixels(CHELSEA))
    assert (got[300:] == [1, 2, 3]).all() and (got[:, 451:] == [1, 2, 3]).all()


def test_pad_value_is_listed_in_colour_order() -> None:
    got = build({"color": "BGR", "pad": {"mode": "bottom_right", "size": [301, 451], "value": [10, 20, 30]}})
    np.testing.assert_array_equal(got[300, 0], [10, 20, 30])  # B, G, R as the tensor holds them
    np.testing.assert_array_equal(got[0, 0], pixels(CHELSEA)[0, 0, ::-1])


def test_bottom_right_refuses_an_image_larger_than_the_pad() -> None:
    with pytest.raises(PreprocessError, match=r"larger than pad\.size"):
        build({"pad": {"mode": "bottom_right", "size": [100, 100]}})


# Values, layout, dtype


def test_scale_mean_std() -> None:
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    got = build({"scale": 1 / 255, "mean": mean, "std": std})
    want = (pixels(CHELSEA) / 255.0 - np.array(mean)) / np.array(std)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_mean_and_std_follow_the_channel_order() -> None:
    got = build({"color": "BGR", "mean": [1, 2, 3], "std": [1, 1, 2]})
    want = (pixels(CHELSEA)[..., ::-1] - np.array([1, 2, 3])) / np.array([1, 1, 2])
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize(
    ("layout", "axes", "batch"), [("NCHW", (2, 0, 1), True), ("NHWC", (0, 1, 2), True), ("CHW", (2, 0, 1), False)]
)
def test_layouts(layout: str, axes: tuple[int, ...], batch: bool) -> None:
    got = build({}, layout=layout)
    want = np.transpose(pixels(CHELSEA), axes).astype(np.float64)
    np.testing.assert_array_equal(got, want[None] if batch else want)


def test_grey_without_channel_axis() -> None:
    got = build({"color": "GRAY"}, CAMERA, layout="NHW")
    np.testing.assert_array_equal(got, pixels(CAMERA, "L")[None])


def test_colour_without_channel_axis_is_refused() -> None:
    with pytest.raises(PreprocessError, match="no channel axis"):
        build({}, layout="NHW")


def test_integer_dtypes_round_and_clip() -> None:
    got = build({"scale": 0.5, "mean": 20}, layout="HWC", dtype="int8")
    want = np.clip(np.rint(pixels(CHELSEA) * 0.5 - 20), -128, 127)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)
    assert build({}, dtype="uint8").dtype == np.uint8
    assert build({}, dtype="float16").dtype == np.float16


def test_unknown_dtype_is_refused() -> None:
    with pytest.raises(PreprocessError, match="dtype"):
        build({}, dtype="complex64")


# Bounds on hostile files


def _png_header_only(path: Path, width: int, height: int) -> None:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    )


def test_huge_dimensions_are_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "bomb.png"
    _png_header_only(path, 8000, 8000)  # 64 megapixels declared in a few bytes
    with pytest.raises(PreprocessError, match="more than the 50000000"):
        build({}, path)


def test_absurd_dimensions_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.png"
    _png_header_only(path, 100_000, 100_000)
    with pytest.raises(PreprocessError, match="pixels"):
        build({}, path)


def test_large_files_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode_module, "MAX_FILE_BYTES", 1000)
    with pytest.raises(PreprocessError, match="bytes"):
        build({}, CHELSEA)


def test_not_an_image(tmp_path: Path) -> None:
    path = tmp_path / "notes.png"
    path.write_text("not an image")
    with pytest.raises(PreprocessError, match="cannot be decoded"):
        build({}, path)


def test_sixteen_bit_images_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.png"
    Image.fromarray(np.full((4, 4), 40000, np.uint16)).save(path)
    with pytest.raises(PreprocessError, match="8-bit"):
        build({}, path)


def test_an_oversized_output_is_refused() -> None:
    with pytest.raises(PreprocessError, match="pixels"):
        build({"resize": {"mode": "exact", "size": [16384, 16384]}})


def test_default_tolerance_is_two_grey_levels() -> None:
    spec = parse_image({"scale": 1 / 255, "std": [0.229, 0.224, 0.225]})
    assert math.isclose(spec.tolerance_value, 2 / 255 / 0.224)
    assert ImageSpec().tolerance_value == 2.0
    assert parse_image({"tolerance": 0.5}).tolerance_value == 0.5


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear", "bicubic", "lanczos"])
def test_opencv_resize_when_opencv_is_installed(interpolation: str) -> None:
    cv2 = pytest.importorskip("cv2")
    flags = {
        "nearest": "INTER_NEAREST",
        "bilinear": "INTER_LINEAR",
        "bicubic": "INTER_CUBIC",
        "lanczos": "INTER_LANCZOS4",
    }
    got = build({"resize": {"mode": "exact", "size": [100, 150], "interpolation": interpolation, "library": "opencv"}})
    want = cv2.resize(pixels(CHELSEA), (150, 100), interpolation=getattr(cv2, flags[interpolation]))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("library", ["opencv", "torch"])
def test_a_library_that_is_not_installed_cannot_be_reproduced(library: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.preprocess.errors import CannotReproduce

    for module in ("cv2", "torch", "torch.nn.functional"):
        monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    with pytest.raises(CannotReproduce, match="not installed"):
        build({"resize": {"mode": "exact", "size": 8, "interpolation": "bilinear", "library": library}})


def test_interpolations_a_library_lacks_cannot_be_reproduced() -> None:
    from checker.preprocess.errors import CannotReproduce

    with pytest.raises(CannotReproduce, match="box"):
        build({"resize": {"mode": "exact", "size": 8, "interpolation": "box", "library": "opencv"}})
    with pytest.raises(CannotReproduce, match="lanczos"):
        build({"resize": {"mode": "exact", "size": 8, "interpolation": "lanczos", "library": "torch"}})
