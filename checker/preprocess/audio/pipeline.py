"""Audio preprocessing as ordered steps: a raw WAV (or FLAC, OGG) file becomes the tensor the manifest declares.

The signal is a float32 array [channels, samples] in -1..1 from `decode` on; `frames` adds an axis of window
samples and `batch` a leading batch axis. Each step runs exactly where the list puts it, by the kernel
registered to its type. Only inputs that declare `steps` are rebuilt: an audio input without them keeps its
old meaning (raw files kept for a reader).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from checker.preprocess.audio.decode import Decoded
from checker.preprocess.audio.spec import AudioSpec
from checker.preprocess.audio.steps import (
    LETTERS,
    MAX_REPEAT,
    MAX_SAMPLES,
    NORMALIZE_MODES,
    POSITIONS,
    QUALITIES,
    REGISTRY,
    AudioStep,
    Batch,
    Cast,
    Decode,
    Frames,
    Gain,
    Layout,
    Mix,
    Normalize,
    Pad,
    Resample,
    Scale,
    Trim,
)
from checker.preprocess.audio.stream import Stream, frame
from checker.preprocess.errors import MissingExtra, PreprocessError
from checker.preprocess.layout import cast, numpy_dtype


@dataclass
class Signal:
    """The signal between steps: its array, the letters naming its axes, and its sample rate."""

    x: np.ndarray
    axes: str
    rate: int
    file_rate: int
    resampled: bool = False
    channels: int = 0  # the decoded file's, or 1 after a mix
    arranged: bool = False  # a layout step has arranged it


Decoder = Callable[[str], Decoded]


@dataclass(frozen=True)
class Result:
    tensor: np.ndarray
    rate: int
    channels: int
    file_rate: int
    resampled: bool


def audio_layout(layout: Any, shape: Any, spec: AudioSpec) -> str:
    """The input's layout when it is one of audio letters; else inferred from the rank of its shape."""
    if isinstance(layout, str) and layout and set(layout) <= set(LETTERS):
        return layout
    if any(isinstance(s, Layout) for s in spec.steps):
        return ""  # a layout step arranges the tensor
    framed = any(isinstance(s, Frames) for s in spec.steps)
    rank = len(shape) if isinstance(shape, list) else -1
    guess = ({2: "TF", 3: "NTF", 4: "NCTF"} if framed else {1: "T", 2: "NT", 3: "NCT"}).get(rank)
    if guess is None:
        raise PreprocessError("the input declares no layout for its audio tensor; add `layout` (letters N, C, T, F)")
    return guess


def build_audio(spec: AudioSpec, decoder: Decoder, layout: str, dtype: str) -> Result:
    """The tensor the steps make from the decoded file; `layout` is the input's arrangement ("" when a
    `layout` step arranges it). A streamed input's tensor holds one call's tensor per frame on a leading axis."""
    if spec.stream is not None:
        return _streamed(spec, spec.stream, decoder, layout, dtype)
    signal = _run(spec.steps, None, decoder)
    assert signal is not None  # parse_steps begins every list with its decode
    tensor = _finish(signal, layout, dtype)
    return Result(tensor, signal.rate, signal.channels, signal.file_rate, signal.resampled)


def _run(steps: tuple[AudioStep, ...], signal: Signal | None, decoder: Decoder) -> Signal | None:
    for step in steps:
        signal = _apply(step, signal, decoder)
    return signal


def _finish(signal: Signal, layout: str, dtype: str) -> np.ndarray:
    if not signal.arranged:
        signal.x = arrange(signal, layout or signal.axes)
    return cast(signal.x, numpy_dtype(dtype))


# The steps that read the whole signal: an application decodes, mixes and resamples its stream as it arrives,
# before it cuts the stream into calls.
WHOLE_SIGNAL = (Decode, Mix, Resample)


def clip_samples(spec: AudioSpec, decoder: Decoder) -> int:
    """Samples in the signal a stream is cut from: after the steps that read the whole signal."""
    cut = next((i for i, s in enumerate(spec.steps) if not isinstance(s, WHOLE_SIGNAL)), len(spec.steps))
    clip = _run(spec.steps[:cut], None, decoder)
    assert clip is not None
    return int(clip.x.shape[_axis(clip, "T")])


def _streamed(spec: AudioSpec, stream: Stream, decoder: Decoder, layout: str, dtype: str) -> Result:
    cut = next((i for i, s in enumerate(spec.steps) if not isinstance(s, WHOLE_SIGNAL)), len(spec.steps))
    clip = _run(spec.steps[:cut], None, decoder)
    assert clip is not None
    t = _axis(clip, "T")
    starts = stream.starts(clip.x.shape[t])
    if not starts:
        raise PreprocessError(
            f"{stream.words()}: the signal has {clip.x.shape[t]} samples, fewer than one call's "
            f"({stream.chunk if stream.first == 'zeros' else stream.length} samples)"
        )
    _bound(clip.x.size // max(clip.x.shape[t], 1) * stream.length * len(starts))
    frames = []
    for start in starts:
        signal = replace(clip, x=frame(clip.x, t, start, stream.length))
        done = _run(spec.steps[cut:], signal, decoder)
        assert done is not None
        frames.append(_finish(done, layout, dtype))
    _bound(frames[0].size * len(frames))
    return Result(np.stack(frames), clip.rate, clip.channels, clip.file_rate, clip.resampled)


# A kernel runs one step type: the step, the signal so far (None before decode) and the file's decoder.
Kernel = Callable[[Any, Any, Decoder], Signal]


def _apply(step: AudioStep, s: Signal | None, decoder: Decoder) -> Signal:
    kernel: Kernel = REGISTRY.kernel(type(step))
    if s is None or isinstance(step, (Decode, Layout)):
        return kernel(step, s, decoder)
    try:
        return kernel(step, s, decoder)
    except (ValueError, TypeError) as e:  # a per-channel list that does not fit the channels, say
        raise PreprocessError(f"{step.words()} cannot be applied to a signal of shape {list(s.x.shape)}: {e}") from e


@REGISTRY.register_kernel(Decode)
def _decode(step: Decode, _: Signal | None, decoder: Decoder) -> Signal:
    decoded = decoder(str(step.library))
    return Signal(decoded.samples, "CT", decoded.rate, decoded.rate, channels=int(decoded.samples.shape[0]))


@REGISTRY.register_kernel(Layout)
def _layout(step: Layout, s: Signal, _: Decoder) -> Signal:
    s.x, s.axes, s.arranged = arrange(s, str(step.layout)), str(step.layout), True
    return s


def _axis(s: Signal, letter: str) -> int:
    if letter not in s.axes:
        raise PreprocessError(f"the signal has no {letter} axis here (its axes: {s.axes})")
    return s.axes.index(letter)


@REGISTRY.register_kernel(Mix)
def _mix(step: Mix, s: Signal, _: Decoder) -> Signal:
    to = step.to
    s.channels = 1
    c = _axis(s, "C")
    if to == "mono":
        s.x = s.x.mean(axis=c, keepdims=True, dtype=np.float32)
    elif to == "first":
        s.x = np.take(s.x, [0], axis=c)
    else:
        raise PreprocessError(f"mix: `to` is {to!r}; expected mono or first")
    return s


@REGISTRY.register_kernel(Resample)
def _resample(step: Resample, s: Signal, _: Decoder) -> Signal:
    rate, library = int(step.rate), str(step.library)
    if rate == s.rate:
        return replace(s, resampled=True)
    t = _axis(s, "T")
    _bound(math.ceil(s.x.size * rate / s.rate))
    moved = np.moveaxis(s.x, t, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    if library == "soxr":
        out = _soxr(flat, s.rate, rate, str(step.quality))
    elif library == "scipy":
        out = _scipy(flat, s.rate, rate)
    else:
        raise PreprocessError(f"resample: unknown library {library!r}; known: soxr, scipy")
    x = np.moveaxis(out.reshape(*moved.shape[:-1], out.shape[-1]), -1, t)
    return replace(s, x=np.ascontiguousarray(x, dtype=np.float32), rate=rate, resampled=True)


def _soxr(flat: np.ndarray, rate_in: int, rate_out: int, quality: str) -> np.ndarray:
    try:
        import soxr  # an optional extra ([audio]), loaded by the first resample that needs it
    except ImportError as e:
        raise MissingExtra("audio", "soxr") from e
    if quality not in QUALITIES:
        raise PreprocessError(f"resample: quality {quality!r}; soxr's are {', '.join(QUALITIES)}")
    # soxr takes [frames, channels]; each row here is one channel.
    out = np.asarray(
        soxr.resample(np.ascontiguousarray(flat.T, dtype=np.float32), rate_in, rate_out, quality=quality),
        dtype=np.float32,
    )
    rows: np.ndarray = out.reshape(-1, flat.shape[0]).T
    return rows


def _scipy(flat: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    try:
        from scipy.signal import resample_poly  # optional, and slow to import: only for library: scipy
    except ImportError as e:
        raise MissingExtra("audio", "scipy") from e
    g = math.gcd(rate_in, rate_out)
    return np.asarray(resample_poly(flat, rate_out // g, rate_in // g, axis=-1), dtype=np.float32)


@REGISTRY.register_kernel(Gain)
def _gain(step: Gain, s: Signal, _: Decoder) -> Signal:
    db = step.db
    s.x = (s.x * np.float32(10.0 ** (float(db) / 20.0))).astype(np.float32)
    return s


@REGISTRY.register_kernel(Scale)
def _scale(step: Scale, s: Signal, _: Decoder) -> Signal:
    factor = step.factor
    s.x = (s.x * np.float32(factor)).astype(np.float32)
    return s


@REGISTRY.register_kernel(Normalize)
def _normalize(step: Normalize, s: Signal, _: Decoder) -> Signal:
    """Fixed mean/std per channel, or per channel over the signal: zero mean and unit variance (Hugging Face's
    Wav2Vec2FeatureExtractor: (x - mean) / sqrt(var + 1e-7)) or peak (x / max|x|)."""
    mode = step.mode
    c = s.axes.index("C") if "C" in s.axes else None
    over = tuple(i for i in range(s.x.ndim) if i != c and s.axes[i] != "N")
    if mode == "zero_mean_unit_var":
        eps = np.float32(step.epsilon)
        mean = s.x.mean(axis=over, keepdims=True, dtype=np.float32)
        var = s.x.var(axis=over, keepdims=True, dtype=np.float32)
        s.x = ((s.x - mean) / np.sqrt(var + eps)).astype(np.float32)
    elif mode == "peak":
        peak = np.abs(s.x).max(axis=over, keepdims=True, initial=0.0)
        s.x = (s.x / np.where(peak > 0, peak, np.float32(1.0))).astype(np.float32)
    elif mode is None:
        shape = [1] * s.x.ndim
        if c is not None:
            shape[c] = -1
        mean = np.asarray(step.mean, dtype=np.float32).reshape(shape)
        std = np.asarray(step.std, dtype=np.float32).reshape(shape)
        s.x = ((s.x - mean) / std).astype(np.float32)
    else:
        raise PreprocessError(f"normalize: mode {mode!r}; known: {', '.join(NORMALIZE_MODES)}")
    return s


def _offsets(extra: int, position: str) -> tuple[int, int]:
    """Samples before and after the signal when `extra` are added (or removed) around it."""
    if position not in POSITIONS:
        raise PreprocessError(f"position {position!r}; known: {', '.join(POSITIONS)}")
    before = {"start": 0, "end": extra, "center": extra // 2}[position]
    return before, extra - before


@REGISTRY.register_kernel(Pad)
def _pad(step: Pad, s: Signal, _: Decoder) -> Signal:
    t = _axis(s, "T")
    have = s.x.shape[t]
    want = int(step.to if step.to is not None else max(have, int(step.at_least or 0)))
    if want < have:
        raise PreprocessError(f"pad: the signal has {have} samples, more than `to: {want}`; trim it first")
    _bound(s.x.size // max(have, 1) * want)
    before, after = _offsets(want - have, str(step.position))
    widths = [(0, 0)] * s.x.ndim
    widths[t] = (before, after)
    s.x = np.pad(s.x, widths, constant_values=np.float32(step.value))
    return s


@REGISTRY.register_kernel(Trim)
def _trim(step: Trim, s: Signal, _: Decoder) -> Signal:
    t = _axis(s, "T")
    have, want = s.x.shape[t], int(step.to)
    if want < have:
        before, __ = _offsets(have - want, str(step.position))
        s.x = np.take(s.x, range(before, before + want), axis=t)
    return s


@REGISTRY.register_kernel(Frames)
def _frames(step: Frames, s: Signal, _: Decoder) -> Signal:
    size, hop = int(step.size), int(step.hop if step.hop is not None else step.size)
    if size < 1 or hop < 1:
        raise PreprocessError("frames: `size` and `hop` must be at least 1")
    t = _axis(s, "T")
    x = np.moveaxis(s.x, t, -1)
    count = 1 + math.ceil(max(x.shape[-1] - size, 0) / hop)
    _bound(x.size // max(x.shape[-1], 1) * count * size)
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, (count - 1) * hop + size - x.shape[-1])])
    windows = np.lib.stride_tricks.sliding_window_view(padded, size, axis=-1)[..., ::hop, :][..., :count, :]
    axes = s.axes.replace("T", "") + "TF"
    s.x, s.axes = np.ascontiguousarray(windows), axes
    return s


@REGISTRY.register_kernel(Batch)
def _batch(step: Batch, s: Signal, _: Decoder) -> Signal:
    repeat = int(step.repeat)
    if "N" in s.axes or not 1 <= repeat <= MAX_REPEAT:
        raise PreprocessError(f"batch: one batch step, with `repeat` from 1 to {MAX_REPEAT}")
    _bound(s.x.size * repeat)
    s.x, s.axes = np.repeat(s.x[None], repeat, axis=0), "N" + s.axes
    return s


@REGISTRY.register_kernel(Cast)
def _cast(step: Cast, s: Signal, _: Decoder) -> Signal:
    s.x = cast(s.x, numpy_dtype(step.dtype))
    return s


def _bound(samples: int) -> None:
    if samples > MAX_SAMPLES:
        raise PreprocessError(f"the steps would make {samples} values, more than {MAX_SAMPLES}")


def arrange(s: Signal, layout: str) -> np.ndarray:
    """Transpose the signal's axes to `layout`; an axis the layout leaves out must have size 1, and N is added."""
    if not isinstance(layout, str) or len(set(layout)) != len(layout) or not set(layout) <= set(LETTERS):
        raise PreprocessError(f"layout {layout!r} is not one an audio tensor is arranged in (letters {LETTERS})")
    x, axes = s.x, s.axes
    for letter in [a for a in axes if a not in layout]:
        i = axes.index(letter)
        if x.shape[i] != 1:
            raise PreprocessError(
                f"layout {layout} has no {letter} axis, but the signal has {x.shape[i]} along it "
                + ("(mix the channels first)" if letter == "C" else "")
            )
        x, axes = np.squeeze(x, axis=i), axes.replace(letter, "")
    missing = [a for a in layout if a not in axes]
    if set(missing) - {"N", "C"}:
        raise PreprocessError(f"layout {layout} names axes the signal does not have ({', '.join(missing)})")
    for letter in missing:
        x, axes = x[None], letter + axes
    return np.transpose(x, [axes.index(a) for a in layout])
