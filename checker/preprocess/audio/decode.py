"""Decoding a raw audio file within bounds: soundfile (libsndfile) or the standard library's wave module."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from checker.bundle.paths import regular_size
from checker.preprocess.audio.steps import MAX_RATE, MAX_SAMPLES
from checker.preprocess.errors import MissingExtra, PreprocessError

MAX_FILE_BYTES = 200 << 20
MAX_CHANNELS = 64


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
        import soundfile  # loaded on the first audio file: libsndfile costs a run without audio its start-up
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
    import wave  # only for `decode: {library: wave}`: a run that decodes no such file does not load it

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
