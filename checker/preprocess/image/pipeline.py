"""The one engine that runs an image step list: a decoded file in, the input's tensor out.

The shorthand fields expand to a step list (shorthand.py), so every image input is rebuilt here. Results after
each prefix of a step list can be kept in a `Memo`, so that the explanations, which try many lists that share
their first steps, compute each shared prefix once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from checker.preprocess.bounds import MAX_IMAGE_BYTES, MAX_OUTPUT_PIXELS, check_size
from checker.preprocess.errors import CannotReproduce, PreprocessError
from checker.preprocess.image import geometry as geo
from checker.preprocess.image.condition import When
from checker.preprocess.image.decode import Decoded
from checker.preprocess.image.jpeg import round_trip
from checker.preprocess.image.resample import opencv, pillow, resize_with
from checker.preprocess.image.steps import (
    REGISTRY,
    Batch,
    Cast,
    Convert,
    Crop,
    Decode,
    Jpeg,
    Layout,
    Normalize,
    Pad,
    Resize,
    Scale,
    Step,
)
from checker.preprocess.layout import cast, numpy_dtype

MEMO_BYTES = 256 << 20
# A state larger than this is made again when asked rather than kept: a 50-megapixel photograph decoded whole
# is 150 MB, which the decoded file already holds, and keeping a copy for the whole search doubles it.
MEMO_STATE_BYTES = 32 << 20


@dataclass(frozen=True)
class Pixels:
    """N x H x W x C pixels between steps; `order` is the channel order (RGB, BGR or L)."""

    array: np.ndarray
    order: str
    batched: bool = False
    layout: str | None = None  # set once a layout step has arranged the tensor
    # Values become float32 at the first float step, as the spec says; the shorthand fields always computed
    # in float64, and keep doing so.
    float_dtype: type[np.floating[Any]] = np.float32
    # The array is a buffer this run made and nobody else holds (not a view of the decoded image, not kept in
    # a Memo), so a value step may write into it rather than allocate another.
    owned: bool = False


def _with(state: Pixels, array: np.ndarray, owned: bool = False) -> Pixels:
    """`state` with other pixels: `dataclasses.replace` costs several times more, once per step of every image."""
    return Pixels(array, state.order, state.batched, state.layout, state.float_dtype, owned)


@dataclass
class Memo:
    """Pixels after a prefix of a step list, kept within a byte budget; one decode per raw file."""

    states: dict[tuple[Step, ...], Pixels] = field(default_factory=dict)
    used: int = 0

    def get(self, steps: tuple[Step, ...]) -> tuple[int, Pixels | None]:
        if not self.states:
            return 0, None  # nothing kept yet: no prefix to hash
        for k in range(len(steps), 0, -1):
            found = self.states.get(steps[:k])
            if found is not None:
                return k, found
        return 0, None

    def put(self, steps: tuple[Step, ...], state: Pixels) -> bool:
        """Keep `state` if it fits; whether its own pixels were kept (then nothing may write into them)."""
        size = int(state.array.nbytes)
        if size > MEMO_STATE_BYTES or self.used + size > MEMO_BYTES:
            return False
        if _holder_bytes(state.array) > size:
            # a view (a crop of the decoded photograph) keeps its whole image alive: its pixels are copied
            self.states[steps] = _with(state, state.array.copy())
            self.used += size
            return False
        self.states[steps] = state
        self.used += size
        return True


def _holder_bytes(arr: np.ndarray) -> int:
    """The bytes the array that holds `arr`'s pixels takes: more than `arr.nbytes` for a view into a larger one."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return int(arr.nbytes)


def run(
    steps: tuple[Step, ...],
    decoded: Decoded,
    layout: str,
    dtype: str,
    memo: Memo | None = None,
    float64: bool = False,
) -> np.ndarray:
    """The tensor `decoded` becomes: `steps` in order, then the input's `layout` (unless a step arranged it)
    and its `dtype`."""
    np_dtype = numpy_dtype(dtype)
    steps = crops_first(steps)
    done, state = memo.get(steps) if memo is not None else (0, None)
    # A value step may overwrite the pixels the previous step made unless a memo keeps them: a state too large
    # for the memo is written over, so a search on a 50-megapixel photograph holds one full-size copy, not two.
    in_place = memo is None or state is None
    i = done
    while i < len(steps):
        fused = _decode_cropped(steps, i, decoded)
        grey = None if fused is not None else _grey_first(steps, i, decoded, in_place)
        if fused is None and grey is None:
            grey = _decode_resized(steps, i, decoded)
        if fused is not None:
            state, i = fused, i + 1  # the crop was applied with the decode
        elif grey is not None:
            state, i = grey  # the steps up to i ran with the decode, on the grey band or at the resized size
            fused = state
        else:
            state = apply(steps[i], state, decoded, in_place)
        if float64 and (i == 0 or fused is not None):
            state = replace(state, float_dtype=np.float64)
        if memo is not None:
            in_place = not memo.put(steps[: i + 1], state)
        i += 1
    if state is None:
        raise PreprocessError("the step list is empty")
    tensor = state.array if state.layout is not None else arrange(state, layout)
    if np_dtype.kind == "f":
        return tensor.astype(np_dtype, copy=False)  # no copy when the steps made this dtype already
    return cast(tensor, np_dtype)


# Steps that change each pixel by its own value alone (and never the size): a crop, which only selects pixels,
# gives the same tensor before them as after them, and costs far less before them on a large image.
_PER_PIXEL = (Convert, Scale, Normalize, Cast)


def crops_first(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """`steps` in the order they are run: each crop that pads nothing moved before the per-pixel steps just
    before it, so that a 50-megapixel photograph is cut to the crop before it is converted or made float. The
    tensor is the same: those steps act on each pixel alone, and the crop's size and `when` do not depend on
    values. A crop that may pad is left in place, its fill being in the units of its place."""
    out = list(steps)
    for i in range(1, len(out)):
        step = out[i]
        if not isinstance(step, Crop) or step.pad_if_smaller is not None:
            continue
        j = i
        while j > 1 and isinstance(out[j - 1], _PER_PIXEL):
            out[j - 1], out[j] = out[j], out[j - 1]
            j -= 1
    return tuple(out)


def _decode_cropped(steps: tuple[Step, ...], i: int, decoded: Decoded) -> Pixels | None:
    """A Pillow decode and the crop after it as one: the file's own pixels cut first, then converted to the
    mode (each pixel alone), so a grey 50-megapixel file never becomes a 150 MB RGB array for a 32 x 32 crop.
    None where they cannot be fused (the crop would pad, or Pillow does not decode)."""
    if i != 0 or len(steps) < 2 or not isinstance(steps[0], Decode) or not isinstance(steps[1], Crop):
        return None
    step, crop = steps[0], steps[1]
    if step.library != "pillow" or step.alpha is not None:
        return None
    w, h = decoded.size(step.applies_exif)
    box = geo.crop_box(crop, h, w)
    if box is None or (crop.when is not None and not crop.when.holds(h, w)):
        return None
    im = decoded.upright if step.applies_exif else decoded.stored
    top, left, ch, cw = box
    _check_size_of(crop, (ch, cw))
    return decode_step(step, Decoded(im.crop((left, top, left + cw, top + ch)), 1))  # a Pillow decode: no file


def _decode_resized(steps: tuple[Step, ...], i: int, decoded: Decoded) -> tuple[Pixels, int] | None:
    """A Pillow decode and the Pillow resize after it (past any RGB <-> BGR swaps) as one: the decoded image
    resized as it is, its pixels read only at the new size, so a 50-megapixel photograph resized to 36 pixels
    never becomes a 150 MB array (nor the copy that `convert` and NumPy each make). The tensor is the same:
    Pillow resizes the image an array of the same pixels would make, each band alike (so BGR is the resized RGB
    reversed). Returns the pixels and the index of the resize; None where they cannot be fused."""
    if i != 0 or not steps or not isinstance(steps[0], Decode):
        return None
    step, order, k = steps[0], steps[0].mode, 1
    while k < len(steps) and _swaps(steps[k], order):
        order, k = ("BGR" if order == "RGB" else "RGB"), k + 1  # a swap before the resize: the same swap after
    resize = steps[k] if k < len(steps) else None
    if not isinstance(resize, Resize) or step.library != "pillow" or resize.library != "pillow":
        return None
    w, h = decoded.size(step.applies_exif)
    if resize.when is not None and not resize.when.holds(h, w):
        return None
    size = geo.resize_size(resize, h, w)
    if size == (h, w):
        return None  # no resample: the usual run reads the pixels as they are
    mode = "L" if step.mode == "L" else "RGB"
    check_size(size, "resize", 1 if mode == "L" else 3)
    try:
        im = _pillow_image(step, decoded)
        im = im if im.mode == mode else im.convert(mode)
        flt = getattr(pillow().Resampling, resize.filter_name.upper())
        arr = np.asarray(im.resize((size[1], size[0]), resample=flt), dtype=np.uint8)
    except (OSError, ValueError) as e:
        raise PreprocessError(f"the image cannot be converted to {mode} and resized: {e}") from e
    arr = arr.reshape(size[0], size[1], -1)
    return Pixels((reversed_channels(arr) if order == "BGR" else arr)[None], order, owned=True), k


def _swaps(step: Step, order: str) -> bool:
    """Whether `step` turns pixels in `order` from RGB to BGR or back."""
    return isinstance(step, Convert) and {order, step.to} == {"RGB", "BGR"}


# The modes of a file whose RGB is one grey value repeated: Pillow's convert("RGB") copies L into each band.
_GREY_MODES = ("L", "LA", "1")


def _grey_first(steps: tuple[Step, ...], i: int, decoded: Decoded, in_place: bool) -> tuple[Pixels, int] | None:
    """A grey file decoded as RGB or BGR, with the geometry that follows run on its one band before the band is
    repeated: a 50-megapixel grey photograph resized to 36 pixels is never three bands of 50 megapixels. The
    tensor is the same (convert("RGB") of L repeats the band; `per_band` steps treat equal bands alike). Returns
    the pixels and the index of the last step run; None where this does not apply."""
    if i != 0 or not steps or not isinstance(steps[0], Decode):
        return None
    step = steps[0]
    if step.library != "pillow" or step.alpha is not None or step.mode == "L":
        return None
    if decoded.stored_mode not in _GREY_MODES:
        return None  # checked first: turning the image upright for nothing costs a copy of it
    im = decoded.upright if step.applies_exif else decoded.stored
    last = 0
    while last + 1 < len(steps) and steps[last + 1].per_band():
        last += 1
    if last == 0 or im.mode not in _GREY_MODES:
        return None
    planned = planned_size(steps[: last + 1], decoded)
    if planned is None or planned[0] * planned[1] * 3 * 4 > MAX_IMAGE_BYTES:
        return None  # the usual run says what fails, or refuses the size, step by step
    state = decode_step(replace(step, mode="L"), decoded)
    for k in range(1, last + 1):
        state = apply(steps[k], state, decoded, in_place)
    return Pixels(np.repeat(state.array, 3, axis=-1), step.mode, owned=True), last


def planned_size(steps: tuple[Step, ...], decoded: Decoded) -> tuple[int, int] | None:
    """The height and width `steps` make of `decoded`, from the sizes alone (no pixel is touched); None when a
    step cannot say (it would fail: the run says why)."""
    first = steps[0] if steps and isinstance(steps[0], Decode) else Decode()
    w, h = decoded.size(first.applies_exif)
    return geo.planned_size(steps, h, w)


def _check_size_of(crop: Crop, size: tuple[int, int]) -> None:
    if crop.center is not None:
        check_size(size, "crop", 3)


def apply(step: Step, state: Pixels | None, decoded: Decoded, in_place: bool = False) -> Pixels:
    """One step on `state`; with `in_place`, a value step may overwrite pixels the previous step made."""
    if state is None and not isinstance(step, Decode):
        state = decode_step(Decode(), decoded)
    if state is not None and state.layout is not None and not isinstance(step, (Cast, Decode)):
        raise PreprocessError(f"`{step.words()}` comes after the layout step; only cast may follow it")
    kernel: Kernel = REGISTRY.kernel(type(step))
    return kernel(step, state, decoded, in_place)


# A kernel runs one step type: the step, the pixels so far (None before decode), the decoded file, and whether
# it may overwrite the pixels it was given.
Kernel = Callable[[Any, Any, Decoded, bool], Pixels]


@REGISTRY.register_kernel(Decode)
def _decode_kernel(step: Decode, _: Pixels | None, decoded: Decoded, __: bool) -> Pixels:
    return decode_step(step, decoded)


@REGISTRY.register_kernel(Layout)
def _layout_kernel(step: Layout, state: Pixels, _: Decoded, __: bool) -> Pixels:
    # arrange may return a view: nothing may write into it in place (only cast follows a layout anyway)
    return replace(state, array=arrange(state, step.layout), layout=step.layout, owned=False)


@REGISTRY.register_kernel(Batch)
def _batch_kernel(step: Batch, state: Pixels, _: Decoded, __: bool) -> Pixels:
    if state.batched:
        raise PreprocessError("the step list has two batch steps")
    _check_batch(step.repeat, state.array.shape[1:3])
    return replace(state, array=np.concatenate([state.array] * step.repeat), batched=True)


@REGISTRY.register_kernel(Cast)
def _cast_kernel(step: Cast, state: Pixels, _: Decoded, __: bool) -> Pixels:
    return _with(state, cast(state.array, np.dtype(step.dtype)))


@REGISTRY.register_kernel(Scale)
def _scale_kernel(step: Scale, state: Pixels, _: Decoded, in_place: bool) -> Pixels:
    return _with(state, _scale(state, step, in_place), owned=True)


@REGISTRY.register_kernel(Normalize)
def _normalize_kernel(step: Normalize, state: Pixels, _: Decoded, in_place: bool) -> Pixels:
    return _with(state, _normalize(state, step, in_place), owned=True)


@REGISTRY.register_kernel(Convert)
def _convert_kernel(step: Convert, state: Pixels, _: Decoded, in_place: bool) -> Pixels:
    if in_place and state.owned and {state.order, step.to} == {"RGB", "BGR"} and _swappable(state.array):
        return replace(state, array=_reversed_in_place(state.array), order=step.to)
    return _convert(state, step)


def _per_image(state: Pixels, each: Callable[[np.ndarray], np.ndarray]) -> Pixels:
    if len(state.array) == 1:  # one image: no copy into a stack
        return _with(state, each(state.array[0])[None])
    return _with(state, np.stack([each(img) for img in state.array]))


@REGISTRY.register_kernel(Resize)
def _resize_kernel(step: Resize, state: Pixels, _: Decoded, __: bool) -> Pixels:
    def each(img: np.ndarray) -> np.ndarray:
        if _skipped(step.when, img):
            return img
        size = geo.resize_size(step, *img.shape[:2])
        check_size(size, "resize", img.shape[2])
        return resize_with(img, size, step.library, step.filter_name, step.antialias)

    return _per_image(state, each)


@REGISTRY.register_kernel(Crop)
def _crop_kernel(step: Crop, state: Pixels, _: Decoded, __: bool) -> Pixels:
    def each(img: np.ndarray) -> np.ndarray:
        if _skipped(step.when, img):
            return img
        if step.center is not None:
            check_size(step.center, "crop", img.shape[2])
        return geo.crop(img, step)

    return _per_image(state, each)


@REGISTRY.register_kernel(Jpeg)
def _jpeg_kernel(step: Jpeg, state: Pixels, _: Decoded, __: bool) -> Pixels:
    pixels = _per_image(state, lambda img: round_trip(img, step.quality_used, step.subsampling, step.library))
    return replace(pixels, owned=bool(pixels.array.flags.writeable))  # Pillow's pixels are read-only


@REGISTRY.register_kernel(Pad)
def _pad_kernel(step: Pad, state: Pixels, _: Decoded, __: bool) -> Pixels:
    def each(img: np.ndarray) -> np.ndarray:
        if _skipped(step.when, img):
            return img
        _check_values(step.value, img.shape[2], "pad.value")
        check_size(geo.pad_amounts(step, *img.shape[:2]), "pad", img.shape[2])
        return geo.pad(img, step)

    return _per_image(state, each)


def _skipped(when: When | None, img: np.ndarray) -> bool:
    """Whether a conditional step passes `img` (H x W x C) on unchanged: its `when` does not hold."""
    return when is not None and not when.holds(*img.shape[:2])


def _check_batch(repeat: int, size: tuple[int, ...]) -> None:
    if repeat * size[0] * size[1] > MAX_OUTPUT_PIXELS:
        raise PreprocessError(
            f"batch: {{repeat: {repeat}}} of {size[0]}x{size[1]} images is more than {MAX_OUTPUT_PIXELS} pixels"
        )


def _check_values(values: tuple[float, ...], channels: int, what: str) -> None:
    if len(values) not in (1, channels):
        raise PreprocessError(f"{what} has {len(values)} values; the image has {channels} channel(s) at that step")


# Decoding


def decode_step(step: Decode, decoded: Decoded) -> Pixels:
    arr = _opencv_decode(step, decoded) if step.library == "opencv" else _pillow_decode(step, decoded)
    # pixels read in bands, or made by OpenCV, are this run's own; a small image read whole is Pillow's
    return Pixels(arr[None], step.mode, owned=bool(arr.flags.writeable))


# Pixels read from Pillow at a time. Pillow hands an image to NumPy through `tobytes`, which joins a list of
# chunks: a 50-megapixel photograph read whole is its 150 MB twice over, besides the image itself.
_DECODE_BAND = 1 << 21


def _pillow_decode(step: Decode, decoded: Decoded) -> np.ndarray:
    im = _pillow_image(step, decoded)
    mode = "L" if step.mode == "L" else "RGB"
    try:
        arr = _pillow_pixels(im, mode)
    except (OSError, ValueError) as e:
        raise PreprocessError(f"the image cannot be converted to {mode}: {e}") from e
    if step.mode != "BGR":
        return arr
    return _reversed_in_place(arr) if _swappable(arr) else reversed_channels(arr)


def _pillow_pixels(im: Any, mode: str) -> np.ndarray:
    """`im` converted to `mode` as an H x W x C uint8 array. A large image is converted and read in bands of
    rows (each pixel converts alone, so the pixels are the same): neither a converted copy of the whole image
    nor the bytes Pillow hands NumPy are ever made whole."""
    w, h = im.size
    if w * h <= _DECODE_BAND:
        arr = np.asarray(im if im.mode == mode else im.convert(mode), dtype=np.uint8)
        return arr.reshape(arr.shape[0], arr.shape[1], -1)
    out = np.empty((h, w, 1 if mode == "L" else 3), np.uint8)
    rows = max(1, _DECODE_BAND // w)
    for top in range(0, h, rows):
        band = im.crop((0, top, w, min(h, top + rows)))
        band = band if band.mode == mode else band.convert(mode)
        out[top : top + rows] = np.asarray(band, dtype=np.uint8).reshape(-1, w, out.shape[2])
    return out


def _pillow_image(step: Decode, decoded: Decoded) -> Any:
    """The decoded image as the decode step sees it: upright or as stored, with its alpha composited on the
    step's colour."""
    im = decoded.upright if step.applies_exif else decoded.stored
    if step.alpha is not None and ("A" in im.getbands() or "transparency" in im.info):
        image = pillow()
        colour = tuple(round(v) for v in np.broadcast_to(step.alpha, (3,)))
        try:
            rgba = im.convert("RGBA")
            background = image.new("RGBA", rgba.size, (*colour, 255))
            return image.alpha_composite(background, rgba)
        except (OSError, ValueError) as e:
            raise PreprocessError(f"the image cannot be composited on {colour}: {e}") from e
    return im


def _opencv_decode(step: Decode, decoded: Decoded) -> np.ndarray:
    cv2 = opencv("a decode with library: opencv")
    if step.alpha is not None:
        raise CannotReproduce("decode.alpha composite is what Pillow's decode does; OpenCV's drops the alpha")
    if decoded.path is None:
        raise PreprocessError("the raw file is not at hand for OpenCV to decode")
    flags = cv2.IMREAD_GRAYSCALE if step.mode == "L" else cv2.IMREAD_COLOR
    if not step.applies_exif:
        flags |= cv2.IMREAD_IGNORE_ORIENTATION
    data = np.frombuffer(decoded.path.read_bytes(), dtype=np.uint8)
    decoded.release()  # OpenCV's decode of a large photograph takes twice its pixels for a moment
    arr = cv2.imdecode(data, flags)
    if arr is None:
        raise PreprocessError("OpenCV cannot decode the raw file")
    arr = np.asarray(arr, dtype=np.uint8)
    arr = arr.reshape(arr.shape[0], arr.shape[1], -1)
    return _reversed_in_place(arr) if step.mode == "RGB" else arr


def _swappable(arr: np.ndarray) -> bool:
    return arr.shape[-1] == 3 and arr.flags.c_contiguous and arr.flags.writeable


def _reversed_in_place(arr: np.ndarray) -> np.ndarray:
    """BGR <-> RGB in an array this run alone holds: one band of one channel copied at a time, not a second
    150 MB image (nor a 50 MB channel) for a 50-megapixel photograph."""
    rows = arr.reshape(-1, arr.shape[-2], 3)  # a batch as one tall image, swapped a band of rows at a time
    step = max(1, _DECODE_BAND // max(1, rows.shape[1]))
    for top in range(0, len(rows), step):
        band = rows[top : top + step]
        first = band[..., 0].copy()
        band[..., 0] = band[..., 2]
        band[..., 2] = first
    return arr


# Colour and values


def reversed_channels(arr: np.ndarray) -> np.ndarray:
    """RGB <-> BGR as a C-contiguous copy. A reversed view (`arr[..., ::-1]`) costs nothing here, but OpenCV's
    resize and Pillow's fromarray then copy it element by element, several times slower than a copy made
    here. OpenCV, when something has loaded it, swaps the channels fastest; else one strided copy per channel."""
    cv2 = sys.modules.get("cv2")
    if cv2 is not None and arr.shape[-1] == 3 and arr.dtype in (np.uint8, np.float32) and arr.flags.c_contiguous:
        rows = arr.reshape(-1, arr.shape[-2], 3)  # a batch as one tall image
        return np.asarray(cv2.cvtColor(rows, cv2.COLOR_RGB2BGR)).reshape(arr.shape)
    out = np.empty_like(arr)
    last = arr.shape[-1] - 1
    for c in range(last + 1):
        out[..., c] = arr[..., last - c]
    return out


_LUMA = {"RGB": (0.299, 0.587, 0.114), "BGR": (0.114, 0.587, 0.299)}
_LUMA_BAND = 1 << 20  # pixels converted at a time


def _convert(state: Pixels, step: Convert) -> Pixels:
    src, dst = state.order, step.to
    if src == dst:
        return state
    arr = state.array
    if src == "L":
        return replace(state, array=np.repeat(arr, 3, axis=-1), order=dst)
    if dst != "L":
        return replace(state, array=reversed_channels(arr), order=dst)
    if step.formula == "opencv":
        cv2 = opencv("convert with formula: opencv")
        code = cv2.COLOR_RGB2GRAY if src == "RGB" else cv2.COLOR_BGR2GRAY
        src_arr = arr if arr.dtype in (np.uint8, np.float32) else arr.astype(np.float32)
        grey = np.stack([np.asarray(cv2.cvtColor(np.ascontiguousarray(img), code)) for img in src_arr])
        return replace(state, array=grey[..., None], order="L")
    return replace(state, array=_pillow_luma(arr, src), order="L")


def _pillow_luma(arr: np.ndarray, order: str) -> np.ndarray:
    """Pillow's convert("L"): ITU-R 601-2 luma in 16-bit fixed point, rounded, for 8-bit pixels."""
    rgb = arr if order == "RGB" else arr[..., ::-1]
    if arr.dtype == np.uint8:
        # in bands of rows: four uint32 work arrays of a whole 50-megapixel image would take over 3 GB
        out = np.empty((*rgb.shape[:-1], 1), np.uint8)
        flat_in, flat_out = rgb.reshape(-1, 3), out.reshape(-1)
        for start in range(0, len(flat_in), _LUMA_BAND):
            band = flat_in[start : start + _LUMA_BAND].astype(np.uint32)
            grey = (band[:, 0] * 19595 + band[:, 1] * 38470 + band[:, 2] * 7471 + 0x8000) >> 16
            flat_out[start : start + _LUMA_BAND] = grey
        return out
    weights = np.asarray(_LUMA["RGB"], dtype=np.float32)
    return (rgb.astype(np.float32) @ weights)[..., None]


def _writable(state: Pixels, in_place: bool) -> bool:
    """Whether a value step may write its result over `state`'s pixels: the same operations either way."""
    return in_place and state.owned and state.array.dtype == state.float_dtype


def _scale(state: Pixels, step: Scale, in_place: bool) -> np.ndarray:
    scaled = state.array if _writable(state, in_place) else state.array.astype(state.float_dtype)
    scaled *= state.float_dtype(step.factor)
    return scaled


def _normalize(state: Pixels, step: Normalize, in_place: bool) -> np.ndarray:
    channels = state.array.shape[-1]
    _check_values(step.mean, channels, "normalize.mean")
    _check_values(step.std, channels, "normalize.std")
    dtype = state.float_dtype
    out = state.array if _writable(state, in_place) else state.array.astype(dtype)
    # Per-channel values broadcast over a last axis of 3 run NumPy's loop 3 elements at a time, many times
    # slower than over whole rows; so the values are repeated along a row and the pixels seen as rows. The
    # operations, and so the results, are the same.
    rows = out.reshape(-1, out.shape[-2] * channels) if channels > 1 and out.flags.c_contiguous else out
    np.subtract(rows, _operand(step.mean, dtype, rows is not out and len(step.mean) > 1, out.shape[-2]), out=rows)
    np.divide(rows, _operand(step.std, dtype, rows is not out and len(step.std) > 1, out.shape[-2]), out=rows)
    return out


def _operand(values: tuple[float, ...], dtype: type[np.floating[Any]], along_row: bool, width: int) -> Any:
    """`values` in `dtype`: one number as a scalar, per-channel values as they broadcast (repeated along a row
    of `width` pixels when the pixels are seen as rows)."""
    if len(values) == 1:
        return dtype(values[0])
    per_channel = np.asarray(values, dtype=dtype)
    return np.tile(per_channel, width) if along_row else per_channel


def arrange(state: Pixels, layout: str) -> np.ndarray:
    """N x H x W x C to `layout`; without N in the layout the batch must be one image."""
    arr = state.array
    if "N" not in layout:
        if arr.shape[0] != 1:
            raise PreprocessError(f"layout {layout} has no batch axis, but the batch step made {arr.shape[0]} images")
        arr = arr[0]
        axes = "HWC"
    else:
        axes = "NHWC"
    if "C" not in layout:
        if arr.shape[-1] != 1:
            raise PreprocessError(f"layout {layout} has no channel axis, but the image has {arr.shape[-1]} channels")
        arr = arr[..., 0]
        axes = axes.replace("C", "")
    arranged: np.ndarray = arr.transpose([axes.index(a) for a in layout])  # the method: no Python wrapper
    return arranged
