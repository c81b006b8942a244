"""torchvision as the oracle: the stored tensors are made by torchvision's own `transforms.v2` pipelines, the
manifest declares them as steps with `library: torchvision`, every case has its raw file, and no tolerance is
overridden. Then each single mistake in the manifest is planted, and the explanation must name the edit that
undoes it.

torchvision comes with the `[torch]` extra, which is not in `dev` (torch's default Linux wheel is a CUDA build
of several gigabytes): without it every test here skips, and CI installs it for these tests alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from PIL import Image
from prepkit import bundle_maker, changed, photo, pixels, without

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.checks.ranges import range_stage
from checker.findings import Finding

MEAN = [0.485, 0.456, 0.406]  # ImageNet's, as torchvision's classifiers are trained with
STD = [0.229, 0.224, 0.225]
SCALE = 1 / 255  # ToDtype(torch.float32, scale=True) on uint8 pixels
SHORTER, CROP = 40, 37
FILTERS = ("bilinear", "nearest", "nearest_exact", "bicubic")

# Raw images (h, w): resized so the shorter side is 40, the other side is truncated (56.8 -> 56, 55.33 -> 55);
# then the 37 x 37 centre crop has an offset of 1.5 on the 40 side, which torchvision rounds half to even (2),
# and 9.5 on the landscape's long side (10, where floor gives 9).
SIZES = [(100, 142), (150, 104)]


@pytest.fixture(scope="module")
def v2() -> ModuleType:
    """torchvision.transforms.v2, or the test skips (the `[torch]` extra is not installed)."""
    pytest.importorskip("torch")
    return pytest.importorskip("torchvision.transforms.v2")


def raw_image(tmp: Path, name: str, h: int, w: int, top: int = 0) -> Path:
    """An RGB picture of h x w pixels cut from a real photograph (with its fur's fine detail, so that the
    filters and antialiasing differ visibly)."""
    arr = pixels(photo("chelsea.png"))[top : top + 3 * h // 2, 100 : 100 + 3 * w // 2]
    path = tmp / f"{name}.png"
    Image.fromarray(arr).resize((w, h), Image.Resampling.BOX).save(path)
    return path


def classifier_steps(
    filt: str = "bilinear",
    antialias: bool = True,
    shorter: int = SHORTER,
    max_size: int | None = None,
    crop: int = CROP,
) -> list[dict[str, Any]]:
    """The classic torchvision classifier input declared exactly (torchvision's Resize truncates the computed
    side, `int(40 * long / short)` in float64; CenterCrop rounds its offsets half to even, and pads a smaller
    image with zeros)."""
    resize: dict[str, Any] = {"shorter_side": shorter, "rounding": "floor", "arithmetic": "float_product_first"}
    resize |= {"library": "torchvision", "filter": filt, "antialias": antialias}
    if max_size is not None:
        resize["max_longer"] = max_size
    centre: dict[str, Any] = {"center": [crop, crop], "offset_rounding": "half_even"}
    if crop > shorter:
        centre["pad_if_smaller"] = 0
    return [
        {"decode": {"mode": "RGB"}},
        {"resize": resize},
        {"crop": centre},
        {"scale": SCALE},
        {"normalize": {"mean": MEAN, "std": STD}},
        {"layout": "NCHW"},
    ]


def classifier(
    v2: ModuleType,
    filt: str = "bilinear",
    antialias: bool = True,
    shorter: int = SHORTER,
    max_size: int | None = None,
    crop: int = CROP,
) -> Callable[[Path], np.ndarray]:
    """torchvision's classifier transform on an image file: ToImage, Resize(shorter side), CenterCrop,
    ToDtype(float32, scale=True), Normalize, then a batch of one as the application feeds it."""
    import torch
    from torchvision.transforms import InterpolationMode

    mode = getattr(InterpolationMode, filt.upper())
    transform = v2.Compose(
        [
            v2.ToImage(),
            v2.Resize(shorter, interpolation=mode, max_size=max_size, antialias=antialias),
            v2.CenterCrop(crop),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(MEAN, STD),
        ]
    )

    def run(path: Path) -> np.ndarray:
        with Image.open(path) as im:
            tensor = transform(im.convert("RGB"))
        return np.asarray(tensor.unsqueeze(0).numpy())

    return run


# Scale first, then resize: the resize runs on float pixels (no rounding back to 8 bits, bicubic overshoots).
FLOAT_FIRST = [
    {"decode": {"mode": "RGB"}},
    {"scale": SCALE},
    {"resize": {"size": [24, 30], "library": "torchvision", "filter": "bicubic", "antialias": False}},
    {"normalize": {"mean": MEAN, "std": STD}},
    {"layout": "NCHW"},
]


def float_first(v2: ModuleType) -> Callable[[Path], np.ndarray]:
    import torch
    from torchvision.transforms import InterpolationMode

    transform = v2.Compose(
        [
            v2.ToImage(),
            v2.ToDtype(torch.float32, scale=True),
            v2.Resize([24, 30], interpolation=InterpolationMode.BICUBIC, antialias=False),
            v2.Normalize(MEAN, STD),
        ]
    )

    def run(path: Path) -> np.ndarray:
        with Image.open(path) as im:
            return np.asarray(transform(im.convert("RGB")).unsqueeze(0).numpy())

    return run


def check(
    tmp_path: Path, steps: list[dict[str, Any]], oracle: Callable[[Path], np.ndarray], ranges: bool = False
) -> list[Finding]:
    raws = [raw_image(tmp_path, f"raw{i}", h, w, 40 * i) for i, (h, w) in enumerate(SIZES)]
    crop = next((s["crop"]["center"] for s in steps if "crop" in s), [24, 30])
    shape = [1, 3, *crop]
    entry = {"name": "x", "dtype": "float32", "shape": shape, "preprocessing": {"kind": "image", "steps": steps}}
    cases = [{"name": f"c{i}", "inputs": {"x": oracle(raw)}, "raw": {"x": raw}} for i, raw in enumerate(raws)]
    ctx = bundle_maker(tmp_path)([entry], cases)
    return [*fidelity_stage(ctx), *(range_stage(ctx) if ranges else ())]


@pytest.mark.parametrize("antialias", [True, False], ids=["antialias", "no_antialias"])
@pytest.mark.parametrize("filt", FILTERS)
def test_torchvision_classifier_declared_exactly(tmp_path: Path, v2: ModuleType, filt: str, antialias: bool) -> None:
    found = check(tmp_path, classifier_steps(filt, antialias), classifier(v2, filt, antialias), ranges=True)
    assert found == [], [f.message for f in found]


def test_torchvision_on_a_pil_image_resizes_with_pillow(tmp_path: Path, v2: ModuleType) -> None:
    """The classic transform on a PIL image (ToTensor last, as torchvision's older examples have it): Resize
    and CenterCrop then run on the PIL image, so the resize is Pillow's, declared as `library: pillow`."""
    from torchvision import transforms

    transform = transforms.Compose(
        [
            transforms.Resize(SHORTER, interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.CenterCrop(CROP),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]
    )

    def oracle(path: Path) -> np.ndarray:
        with Image.open(path) as im:
            return np.asarray(transform(im.convert("RGB")).unsqueeze(0).numpy())

    steps = without(changed(classifier_steps("bicubic"), "resize", library="pillow"), "resize", "antialias")
    assert check(tmp_path, steps, oracle, ranges=True) == []
    # torchvision's bicubic without antialias is not Pillow's; with it, it is (to a grey level)
    found = check(tmp_path, changed(classifier_steps("bicubic"), "resize", antialias=False), oracle)
    assert found and {f.id for f in found} == {F.INPUTS_FIDELITY}
    for finding in found:
        assert "when `resize` has `antialias: true` (the manifest has false)" in finding.message, finding.message


def test_torchvision_max_size_declared_exactly(tmp_path: Path, v2: ModuleType) -> None:
    # 100 x 142: the longer side int(40 * 142 / 100) = 56 is over 52, so the shorter is int(52 * 40 / 56) = 37
    # (from the sides just computed: 52 * 100 / 142 would give 36)
    steps, oracle = classifier_steps(max_size=52, crop=33), classifier(v2, max_size=52, crop=33)
    assert check(tmp_path, steps, oracle, ranges=True) == []


def test_torchvision_center_crop_of_a_smaller_image_declared_exactly(tmp_path: Path, v2: ModuleType) -> None:
    # resized to 30 x 42 and 43 x 30, then cropped to 37 x 37: 7 rows (or columns) of zeros, 3 before and 4
    # after (torchvision's CenterCrop; Hugging Face's puts the odd one before)
    steps, oracle = classifier_steps(shorter=30), classifier(v2, shorter=30)
    assert check(tmp_path, steps, oracle, ranges=True) == []


def test_torchvision_computed_sizes(v2: ModuleType) -> None:
    """Resize(n), Resize(n, max_size=m) and Resize(None, max_size=m) of torchvision against the steps'
    `shorter_side: n` (+ `max_longer: m`) and `longer_side: m`, with floor and float_product_first."""
    import torch
    from torchvision.transforms import InterpolationMode

    from checker.preprocess.image.geometry import resize_size
    from checker.preprocess.image.steps import Resize

    exact = {"rounding": "floor", "arithmetic": "float_product_first"}
    for h in range(20, 160, 3):
        for w in range(20, 160, 7):
            image = torch.zeros(1, h, w, dtype=torch.uint8)
            for n, m in ((16, 21), (30, 41), (37, 52)):
                for size, step in (
                    ([n], Resize(shorter_side=n, **exact)),
                    ([n], Resize(shorter_side=n, max_longer=m, **exact)),
                    (None, Resize(longer_side=m, **exact)),
                ):
                    max_size = m if step.max_longer or step.longer_side else None
                    out = v2.functional.resize(image, size, max_size=max_size, interpolation=InterpolationMode.NEAREST)
                    assert resize_size(step, h, w) == tuple(out.shape[-2:]), (h, w, step.words())


def test_torchvision_resize_of_float_pixels_declared_exactly(tmp_path: Path, v2: ModuleType) -> None:
    # bicubic overshoots 0-1 on float pixels: the range follows no bound, and the fidelity holds exactly
    assert check(tmp_path, FLOAT_FIRST, float_first(v2), ranges=True) == []


# (the application's filter and antialias, the manifest with one mistake, the words that must name it)
MISTAKES: list[tuple[str, bool, list[dict[str, Any]], str]] = [
    # Pillow's nearest is torchvision's nearest_exact, not its nearest; OpenCV's INTER_NEAREST often equals that
    # (for the first picture, not the second), and then the explanation names both libraries
    (
        "nearest",
        True,
        without(changed(classifier_steps("nearest"), "resize", library="pillow"), "resize", "antialias"),
        "`library: torchvision, filter: nearest`",
    ),
    (
        "bilinear",
        True,
        changed(classifier_steps(), "resize", antialias=False),
        "when `resize` has `antialias: true` (the manifest has false)",
    ),
    (
        "bicubic",
        False,
        changed(classifier_steps("bicubic", False), "resize", antialias=True),
        "when `resize` has `antialias: false` (the manifest has true)",
    ),
    (
        "bilinear",
        True,
        changed(classifier_steps(), "resize", filter="bicubic"),
        "when `resize` has `filter: bilinear` (the manifest has bicubic)",
    ),
    (
        "nearest_exact",
        False,
        changed(classifier_steps("nearest_exact", False), "resize", filter="nearest"),
        "when `resize` has `filter: nearest_exact` (the manifest has nearest)",
    ),
    (
        "bilinear",
        True,
        without(classifier_steps(), "crop", "offset_rounding"),
        "when `crop` has `offset_rounding: half_even` (the manifest has floor): the offset rounded half to even",
    ),
    (
        "bilinear",
        True,
        without(classifier_steps(), "resize", "rounding"),
        "when `resize` has `rounding: floor` (the manifest has half_up)",
    ),
    (
        "bilinear",
        True,
        changed(classifier_steps(), "decode", mode="BGR"),
        "with channels reversed (RGB where BGR is declared)",
    ),
]


@pytest.mark.parametrize(
    ("filt", "antialias", "steps", "named"), MISTAKES, ids=[f"mistake-{i}" for i in range(len(MISTAKES))]
)
def test_torchvision_single_mistake_is_named(
    tmp_path: Path, v2: ModuleType, filt: str, antialias: bool, steps: list[dict[str, Any]], named: str
) -> None:
    found = check(tmp_path, steps, classifier(v2, filt, antialias))
    assert found, "the planted mistake went unnoticed"
    assert {f.id for f in found} == {F.INPUTS_FIDELITY}, [f.message for f in found]
    for finding in found:
        assert "the stored tensor matches the declared preprocessing" in finding.message, finding.message
        assert named in finding.message, finding.message


def test_torchvision_antialias_on_float_pixels_is_named(tmp_path: Path, v2: ModuleType) -> None:
    found = check(tmp_path, changed(FLOAT_FIRST, "resize", antialias=True), float_first(v2))
    assert found and {f.id for f in found} == {F.INPUTS_FIDELITY}, [f.message for f in found]
    for finding in found:
        assert "when `resize` has `antialias: false` (the manifest has true)" in finding.message, finding.message
