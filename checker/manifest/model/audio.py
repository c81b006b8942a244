"""An audio input's preprocessing: what the input declares of its samples, and its ordered `steps`.

A step's numbers are `Numeric`: an integer the manifest wrote stays one, so that an explanation quotes the step as
written (`gain: 6`). The step classes of `checker/preprocess/audio/steps.py` name their block here (`MODEL`).
"""

# Annotations are evaluated as the class is made (no `from __future__ import annotations`): the builder and
# the generator read them as objects, and evaluating hundreds of annotation strings cost more than the build.

from typing import Annotated, Literal

from checker.manifest.model.common import MAX_NUMBER, NonNegative, Numeric, Range
from checker.manifest.model.core import Block, Const, Keyed, OneOf, S

MAX_SAMPLE_RATE = 10_000_000  # what an input may declare
MAX_RATE = 768_000  # what a resample step may make
MAX_CHANNELS = 64
MAX_WINDOW = 16_777_216  # samples a step may pad, trim or frame to
MAX_REPEAT = 1024
MAX_STEPS = 64
LETTERS = "NCTF"  # batch, channel, time (samples, or frames after `frames`), frame samples

MixTo = Literal["mono", "first"]
Quality = Literal["QQ", "LQ", "MQ", "HQ", "VHQ"]  # soxr's own names
Position = Literal["start", "end", "center"]
NormalizeMode = Literal["zero_mean_unit_var", "peak"]
CastType = Literal["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64"]

RealNumber = Annotated[Numeric, S(minimum=-MAX_NUMBER, maximum=MAX_NUMBER)]
Positive = Annotated[Numeric, S(exclusive_minimum=0, maximum=MAX_NUMBER)]
_POSITION = S("Position", "Where the signal sits (pad) or which part is kept (trim).")


def _samples(title: str, description: str = "Samples.") -> S:
    return S(title, description, minimum=1, maximum=MAX_WINDOW)


class Decode(Block):
    WORDS = S(
        "Decode",
        "Must be first (absent: soundfile). WAV/FLAC/OGG via soundfile, or PCM WAV via the standard library's "
        "wave; integer PCM scaled to -1..1.",
    )
    TAG = "decode"

    library: Annotated[Literal["soundfile", "wave"], S("Library", "soundfile (default) or wave.")] = "soundfile"


class Mix(Block):
    WORDS = S("Mix", "The mean of the channels (mono) or the first channel.")
    TAG = "mix"
    SCALAR = "to"
    MAPPING = "oneOf"

    to: Annotated[MixTo, S("To", "mono (the mean of the channels) or first.")] = "mono"


class Resample(Block):
    WORDS = S("Resample", "To `rate` Hz; a signal already at that rate is unchanged.")
    TAG = "resample"

    rate: Annotated[int, S("Rate", "Samples per second.", minimum=1, maximum=MAX_RATE)]
    library: Annotated[Literal["soxr", "scipy"], S("Library", "soxr (default) or scipy.")] = "soxr"
    quality: Annotated[Quality, S("Quality", "soxr's quality (default HQ).")] = "HQ"


class Gain(Block):
    WORDS = S("Gain", "Multiplies by 10^(dB/20).")
    TAG = "gain"
    SCALAR = "db"
    MAPPING = "oneOf"

    db: Annotated[RealNumber, S("Decibels", "The gain in decibels.")]


class Scale(Block):
    WORDS = S("Scale", "Multiplies by a factor.")
    TAG = "scale"
    SCALAR = "factor"

    factor: RealNumber = 1.0


class Normalize(Block):
    WORDS = S(
        "Normalize",
        "(x - mean) / std per channel; or per channel over the signal: zero_mean_unit_var ((x - mean) / "
        "sqrt(var + epsilon)) or peak (x / max|x|).",
    )
    TAG = "normalize"
    SCALAR = "mode"
    MAPPING = "oneOf"

    mode: NormalizeMode | None = None  # None: the fixed mean and std
    epsilon: Annotated[NonNegative, S("Epsilon", "Added to the variance (default 1e-7).")] = 1e-7
    mean: Annotated[
        RealNumber | Annotated[list[RealNumber], S(min_items=1, max_items=MAX_CHANNELS)],
        OneOf(),
        S("Mean", "Subtracted, per channel or one number."),
    ] = 0.0
    std: Annotated[
        Positive | Annotated[list[Positive], S(min_items=1, max_items=MAX_CHANNELS)],
        OneOf(),
        S("Std", "Divided by, per channel or one number."),
    ] = 1.0


class Pad(Block):
    WORDS = S("Pad", "Pads the time axis to `to` samples, or to `at_least` samples when shorter.")
    TAG = "pad"

    to: Annotated[int | None, _samples("To")] = None
    at_least: Annotated[int | None, _samples("At least")] = None
    position: Annotated[Position, _POSITION] = "start"
    value: Annotated[RealNumber, S("Value", "The pad value (default 0).")] = 0.0


class Trim(Block):
    WORDS = S("Trim", "Cuts the time axis to at most `to` samples.")
    TAG = "trim"

    to: Annotated[int, _samples("To")]
    position: Annotated[Position, _POSITION] = "start"


class Frames(Block):
    WORDS = S(
        "Frames",
        "Slices the time axis into windows of `size` samples every `hop` (default size); the last one is padded "
        "with zeros.",
    )
    TAG = "frames"

    size: Annotated[int, _samples("Size", "Samples per window.")]
    hop: Annotated[int | None, _samples("Hop", "Samples between window starts.")] = None  # None: the size


class Batch(Block):
    WORDS = S("Batch", "Stacks `repeat` copies on a new leading axis N.")
    TAG = "batch"

    repeat: Annotated[int, S("Repeat", "Copies.", minimum=1, maximum=MAX_REPEAT)]


class LayoutStep(Block):
    WORDS = S("Layout", "The tensor's axes: letters N (batch), C (channel), T (time), F (frame samples).")
    TAG = "layout"
    SCALAR = "layout"

    layout: Annotated[str, S(pattern=f"^[{LETTERS}]{{1,4}}$")]


class Cast(Block):
    WORDS = S("Cast", "To this dtype; integers rounded half-to-even and clipped.")
    TAG = "cast"
    SCALAR = "dtype"

    dtype: CastType = "float32"


Step = Annotated[
    Decode | Mix | Resample | Gain | Scale | Normalize | Pad | Trim | Frames | Batch | LayoutStep | Cast,
    Keyed(),
    S("Step", "One step: a mapping with exactly one key, the step's name."),
]
Steps = Annotated[
    list[Step],
    S(
        "Steps",
        "The audio preprocessing as ordered steps, applied exactly in list order; an audio input with steps is "
        "rebuilt from its raw files.",
        min_items=1,
        max_items=MAX_STEPS,
    ),
]


MAX_CHUNK = 1 << 24  # samples: as the `frames` step's size
StreamFirst = Literal["skip", "zeros"]


class Stream(Block):
    WORDS = S(
        "Stream",
        "How a streaming application calls the graph: once per chunk of `chunk` samples, on the last `history` "
        "samples before the chunk followed by the chunk; the first chunk, which has no history, is skipped or "
        "preceded by zeros. The steps up to the last decode, mix or resample run on the whole clip, the rest on "
        "each frame; a case stores the frames on a leading axis.",
    )

    chunk: Annotated[int, S("Chunk", "New samples per call.", minimum=1, maximum=MAX_CHUNK)]
    history: Annotated[
        int, S("History", "Samples before the chunk that each call also takes.", minimum=0, maximum=MAX_CHUNK)
    ] = 0
    first: Annotated[
        StreamFirst,
        S(
            "First",
            "The first chunk, which has no history: skipped (as openWakeWord's buffer does) or preceded by zeros "
            "(as Silero VAD's wrapper does).",
        ),
    ] = "skip"


class Audio(Block):
    TAG = "audio"

    kind: Annotated[Literal["audio"], Const(), S("Kind", "The kind of preprocessing.")]
    sample_rate: Annotated[int | None, S("Sample rate", "Samples per second.", minimum=1, maximum=MAX_SAMPLE_RATE)] = (
        None
    )
    channels: Annotated[int | None, S("Channels", "Audio channels.", minimum=1, maximum=MAX_CHANNELS)] = None
    range: Range | None = None
    window: Annotated[int | None, _samples("Window", "Samples per call.")] = None
    steps: Steps | None = None
    stream: Stream | None = None
    tolerance: Annotated[
        NonNegative | None,
        S("Tolerance", "The largest difference allowed between the rebuilt and the stored tensor (default 1e-5)."),
    ] = None
