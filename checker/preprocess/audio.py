"""Audio preprocessing as ordered steps: a raw WAV (or FLAC, OGG) file becomes the tensor the manifest declares.

The signal is a float32 array [channels, samples] in -1..1 from `decode` on; `frames` adds an axis of window
samples and `batch` a leading batch axis. Each step runs exactly where the list puts it. Only inputs that
declare `steps` are rebuilt: an audio input without them keeps its old meaning (raw files kept for a reader).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from checker.bundle.paths import regular_size
from checker.preprocess.errors import MissingExtra, PreprocessError
from checker.preprocess.layout import cast, numpy_dtype

MAX_FILE_BYTES = 200 << 20
MAX_SAMPLES = 1 << 26  # samples over every channel: 23 minutes of 48 kHz stereo, 256 MiB as float32
MAX_RATE = 768_000
MAX_CHANNELS = 64
STEPS = ("decode", "mix", "resample", "gain", "scale", "normalize", "pad", "trim", "frames", "batch", "layout", "cast")
QUALITIES = ("QQ", "LQ", "MQ", "HQ", "VHQ")  # soxr's own names
POSITIONS = ("start", "end", "center")  # where the signal sits (pad), or which part is kept (trim)
NORMALIZE_MODES = ("zero_mean_unit_var", "peak")
LETTERS = "NCTF"  # batch, channel, time (samples, or frames after `frames`), frame samples


@dataclass(frozen=True)
class Step:
    """One step as the manifest states it: its name and its parameters (a mapping, or a scalar)."""

    name: str
    value: Any

    def param(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default) if isinstance(self.value, Mapping) else default

    def words(self) -> str:
        """The step in the manifest's own words, e.g. `resample: {rate: 16000}`."""
        return f"`{self.name}: {_flow(self.value)}`"


def _flow(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class AudioSpec:
    """An audio input's `steps`, with what the input declares about the result."""

    steps: tuple[Step, ...]
    sample_rate: int | None = None
    channels: int | None = None
    tolerance: float | None = None

    @property
    def tolerance_value(self) -> float:
        # float32 arithmetic in another order (a mean, a resampler's accumulation) moves the last bits only.
        return 1e-5 if self.tolerance is None else self.tolerance

    @classmethod
    def from_manifest(cls, prep: Mapping[str, Any]) -> AudioSpec:
        raw = prep.get("steps")
        if not isinstance(raw, list) or not raw:
            raise PreprocessError("an audio input is rebuilt from its `steps`, and it declares none")
        steps = tuple(_step(item, i) for i, item in enumerate(raw))
        if any(s.name == "decode" for s in steps[1:]):
            raise PreprocessError("`decode` must be the first step")
        if steps[0].name != "decode":
            steps = (Step("decode", {}), *steps)
        tolerance = prep.get("tolerance")
        return cls(steps, _opt_int(prep, "sample_rate"), _opt_int(prep, "channels"), _opt_number(tolerance))


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PreprocessError(f"{where}: {value!r} is not a finite number")
    return float(value)


def _opt_int(prep: Mapping[str, Any], key: str) -> int | None:
    value = prep.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _step(item: Any, index: int) -> Step:
    if not isinstance(item, Mapping) or len(item) != 1:
        raise PreprocessError(f"steps[{index}] must be a mapping with exactly one key, the step's name")
    ((name, value),) = item.items()
    if name not in STEPS:
        raise PreprocessError(f"steps[{index}]: unknown audio step {name!r}; known: {', '.join(STEPS)}")
    step = Step(str(name), value if value is not None else {})
    _validate(step, index)
    return step


# Integer parameters and their bounds; a manifest reaching `checker preprocess` has not met the schema.
_INTEGERS = {
    ("resample", "rate"): MAX_RATE,
    ("pad", "to"): MAX_SAMPLES,
    ("pad", "at_least"): MAX_SAMPLES,
    ("trim", "to"): MAX_SAMPLES,
    ("frames", "size"): MAX_SAMPLES,
    ("frames", "hop"): MAX_SAMPLES,
    ("batch", "repeat"): 1024,
}
_NUMBERS = {("gain", "db"), ("pad", "value"), ("normalize", "epsilon")}


def _validate(step: Step, index: int) -> None:
    """The parameters a step needs, with their types and bounds, checked before any file is read."""
    where = f"steps[{index}] `{step.name}`"
    if step.name in ("scale", "gain") and not isinstance(step.value, Mapping):
        _number(step.value, where)
    elif step.name not in ("mix", "normalize", "layout", "cast") and not isinstance(step.value, Mapping):
        raise PreprocessError(f"{where} takes a mapping of parameters, not {step.value!r}")
    for (name, key), high in _INTEGERS.items():
        value = step.param(key) if name == step.name else None
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high):
            raise PreprocessError(f"{where}: `{key}` is {value!r}; expected an integer from 1 to {high}")
    for name, key in _NUMBERS:
        if name == step.name and step.param(key) is not None:
            _number(step.param(key), f"{where} `{key}`")
    needs = {"resample": "rate", "frames": "size"}
    if step.name in needs and step.param(needs[step.name]) is None:
        raise PreprocessError(f"{where} needs `{needs[step.name]}`")
    if step.name == "pad" and (step.param("to") is None) == (step.param("at_least") is None):
        raise PreprocessError(f"{where} needs one of `to` and `at_least`")
    if step.name == "trim" and step.param("to") is None:
        raise PreprocessError(f"{where} needs `to`")
    if step.name == "layout" and (not isinstance(step.value, str) or not set(step.value) <= set(LETTERS)):
        raise PreprocessError(f"{where}: {step.value!r} is not a layout of the letters {LETTERS}")


@dataclass(frozen=True)
class Decoded:
    """A decoded file: float32 [channels, samples] in -1..1, and the file's own sample rate."""

    samples: np.ndarray
    rate: int


def decode_audio(path: Path, name: str, library: str) -> Decoded:
    """Decode within bounds; a library that is not installed is MissingExtra, never another library."""
    size = regular_size(path)
    if size is None or size > MAX_FILE_BYTES:
        raise PreprocessError(f"{name} is not a regular file of at most {MAX_FILE_BYTES >> 20} MiB")
    if library == "wave":
        return _decode_wave(path, name)
    if library != "soundfile":
        raise PreprocessError(f"decode: unknown library {library!r}; known: soundfile, wave")
    try:
        import soundfile
    except ImportError as e:  # also OSError when libsndfile is missing: soundfile raises it on import
        raise MissingExtra("audio", "soundfile") from e
    except OSError as e:
        raise MissingExtra("audio", "soundfile (its libsndfile)") from e
    try:
        info = soundfile.info(str(path))
        _check_size(info.frames, info.channels, info.samplerate, name)
        data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError) as e:
        raise PreprocessError(f"{name} cannot be decoded as audio: {e}") from e
    return Decoded(np.ascontiguousarray(data.T), int(rate))


def _check_size(frames: int, channels: int, rate: int, name: str) -> None:
    if not 1 <= channels <= MAX_CHANNELS or not 1 <= rate <= MAX_RATE or frames * channels > MAX_SAMPLES:
        raise PreprocessError(
            f"{name}: {frames} frames of {channels} channel(s) at {rate} Hz is beyond the bounds "
            f"({MAX_SAMPLES} samples, {MAX_CHANNELS} channels, {MAX_RATE} Hz)"
        )


def _decode_wave(path: Path, name: str) -> Decoded:
    """PCM WAV through the standard library, scaled as libsndfile scales it (int / 2^(bits-1))."""
    import wave

    try:
        with wave.open(str(path), "rb") as w:
            channels, width, rate, frames = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
            _check_size(frames, channels, rate, name)
            data = w.readframes(frames)
    except (wave.Error, EOFError) as e:
        raise PreprocessError(f"{name} cannot be decoded as a PCM WAV file: {e}") from e
    if width == 1:  # 8-bit WAV is unsigned
        values = (np.frombuffer(data, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 3:
        raw = np.frombuffer(data, np.uint8).reshape(-1, 3)
        ints = (raw[:, 0].astype(np.int32) | raw[:, 1].astype(np.int32) << 8 | raw[:, 2].astype(np.int32) << 16) << 8
        values = ints.astype(np.float32) / np.float32(2**31)
    elif width in (2, 4):
        kind = np.dtype(f"<i{width}")
        values = np.frombuffer(data, kind).astype(np.float32) / np.float32(2 ** (8 * width - 1))
    else:
        raise PreprocessError(f"{name}: {8 * width}-bit samples are not PCM the wave module reads")
    return Decoded(np.ascontiguousarray(values.reshape(-1, channels).T), rate)


@dataclass
class Signal:
    """The signal between steps: its array, the letters naming its axes, and its sample rate."""

    x: np.ndarray
    axes: str
    rate: int
    file_rate: int
    resampled: bool = False


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
    if any(s.name == "layout" for s in spec.steps):
        return ""  # a layout step arranges the tensor
    framed = any(s.name == "frames" for s in spec.steps)
    rank = len(shape) if isinstance(shape, list) else -1
    guess = ({2: "TF", 3: "NTF", 4: "NCTF"} if framed else {1: "T", 2: "NT", 3: "NCT"}).get(rank)
    if guess is None:
        raise PreprocessError("the input declares no layout for its audio tensor; add `layout` (letters N, C, T, F)")
    return guess


def build_audio(spec: AudioSpec, decoder: Decoder, layout: str, dtype: str) -> Result:
    """The tensor the steps make from the decoded file; `layout` is the input's arrangement ("" when a
    `layout` step arranges it)."""
    first = spec.steps[0]
    decoded = decoder(str(first.param("library", "soundfile")))
    signal = Signal(decoded.samples, "CT", decoded.rate, decoded.rate)
    channels = int(decoded.samples.shape[0])
    arranged = False
    for step in spec.steps[1:]:
        if step.name == "layout":
            signal.x, signal.axes = arrange(signal, str(step.value)), str(step.value)
            arranged = True
            continue
        if step.name == "mix":
            channels = 1
        signal = _apply(step, signal)
    if not arranged:
        signal.x = arrange(signal, layout or signal.axes)
    tensor = cast(signal.x, numpy_dtype(dtype))
    return Result(tensor, signal.rate, channels, signal.file_rate, signal.resampled)


def _apply(step: Step, s: Signal) -> Signal:
    handler = _HANDLERS[step.name]
    try:
        return handler(step, s)
    except (ValueError, TypeError) as e:  # a per-channel list that does not fit the channels, say
        raise PreprocessError(f"{step.words()} cannot be applied to a signal of shape {list(s.x.shape)}: {e}") from e


def _axis(s: Signal, letter: str) -> int:
    if letter not in s.axes:
        raise PreprocessError(f"the signal has no {letter} axis here (its axes: {s.axes})")
    return s.axes.index(letter)


def _mix(step: Step, s: Signal) -> Signal:
    to = step.value if isinstance(step.value, str) else step.param("to", "mono")
    c = _axis(s, "C")
    if to == "mono":
        s.x = s.x.mean(axis=c, keepdims=True, dtype=np.float32)
    elif to == "first":
        s.x = np.take(s.x, [0], axis=c)
    else:
        raise PreprocessError(f"mix: `to` is {to!r}; expected mono or first")
    return s


def _resample(step: Step, s: Signal) -> Signal:
    rate, library = int(step.param("rate")), str(step.param("library", "soxr"))
    if rate == s.rate:
        return replace(s, resampled=True)
    t = _axis(s, "T")
    _bound(math.ceil(s.x.size * rate / s.rate))
    moved = np.moveaxis(s.x, t, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    if library == "soxr":
        out = _soxr(flat, s.rate, rate, str(step.param("quality", "HQ")))
    elif library == "scipy":
        out = _scipy(flat, s.rate, rate)
    else:
        raise PreprocessError(f"resample: unknown library {library!r}; known: soxr, scipy")
    x = np.moveaxis(out.reshape(*moved.shape[:-1], out.shape[-1]), -1, t)
    return Signal(np.ascontiguousarray(x, dtype=np.float32), s.axes, rate, s.file_rate, True)


def _soxr(flat: np.ndarray, rate_in: int, rate_out: int, quality: str) -> np.ndarray:
    try:
        import soxr
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
        from scipy.signal import resample_poly
    except ImportError as e:
        raise MissingExtra("audio", "scipy") from e
    g = math.gcd(rate_in, rate_out)
    return np.asarray(resample_poly(flat, rate_out // g, rate_in // g, axis=-1), dtype=np.float32)


def _gain(step: Step, s: Signal) -> Signal:
    db = step.value if isinstance(step.value, (int, float)) else step.param("db", 0.0)
    s.x = (s.x * np.float32(10.0 ** (float(db) / 20.0))).astype(np.float32)
    return s


def _scale(step: Step, s: Signal) -> Signal:
    factor = step.value if isinstance(step.value, (int, float)) else step.param("factor", 1.0)
    s.x = (s.x * np.float32(factor)).astype(np.float32)
    return s


def _normalize(step: Step, s: Signal) -> Signal:
    """Fixed mean/std per channel, or per channel over the signal: zero mean and unit variance (Hugging Face's
    Wav2Vec2FeatureExtractor: (x - mean) / sqrt(var + 1e-7)) or peak (x / max|x|)."""
    mode = step.value if isinstance(step.value, str) else step.param("mode")
    c = s.axes.index("C") if "C" in s.axes else None
    over = tuple(i for i in range(s.x.ndim) if i != c and s.axes[i] != "N")
    if mode == "zero_mean_unit_var":
        eps = np.float32(step.param("epsilon", 1e-7))
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
        mean = np.asarray(step.param("mean", 0.0), dtype=np.float32).reshape(shape)
        std = np.asarray(step.param("std", 1.0), dtype=np.float32).reshape(shape)
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


def _pad(step: Step, s: Signal) -> Signal:
    t = _axis(s, "T")
    have = s.x.shape[t]
    want = int(step.param("to") if step.param("to") is not None else max(have, int(step.param("at_least"))))
    if want < have:
        raise PreprocessError(f"pad: the signal has {have} samples, more than `to: {want}`; trim it first")
    _bound(s.x.size // max(have, 1) * want)
    before, after = _offsets(want - have, str(step.param("position", "start")))
    widths = [(0, 0)] * s.x.ndim
    widths[t] = (before, after)
    s.x = np.pad(s.x, widths, constant_values=np.float32(step.param("value", 0.0)))
    return s


def _trim(step: Step, s: Signal) -> Signal:
    t = _axis(s, "T")
    have, want = s.x.shape[t], int(step.param("to"))
    if want < have:
        before, _ = _offsets(have - want, str(step.param("position", "start")))
        s.x = np.take(s.x, range(before, before + want), axis=t)
    return s


def _frames(step: Step, s: Signal) -> Signal:
    size, hop = int(step.param("size")), int(step.param("hop", step.param("size")))
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


def _batch(step: Step, s: Signal) -> Signal:
    repeat = int(step.param("repeat", 1))
    if "N" in s.axes or not 1 <= repeat <= 1024:
        raise PreprocessError("batch: one batch step, with `repeat` from 1 to 1024")
    _bound(s.x.size * repeat)
    s.x, s.axes = np.repeat(s.x[None], repeat, axis=0), "N" + s.axes
    return s


def _cast(step: Step, s: Signal) -> Signal:
    s.x = cast(s.x, numpy_dtype(step.value))
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


_HANDLERS: dict[str, Callable[[Step, Signal], Signal]] = {
    "mix": _mix,
    "resample": _resample,
    "gain": _gain,
    "scale": _scale,
    "normalize": _normalize,
    "pad": _pad,
    "trim": _trim,
    "frames": _frames,
    "batch": _batch,
    "cast": _cast,
}


@dataclass
class DecodeCache:
    """One decode per raw file and library, shared by the declared steps and every neighbour tried."""

    path: Path
    name: str
    done: dict[str, Decoded] = field(default_factory=dict)

    def done_rate(self) -> int | None:
        """The file's own sample rate, once it has been decoded."""
        return next((d.rate for d in self.done.values()), None)

    def __call__(self, library: str) -> Decoded:
        if library not in self.done:
            self.done[library] = decode_audio(self.path, self.name, library)
        return self.done[library]
