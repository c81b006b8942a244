"""The ordered audio steps a manifest declares (`preprocessing.steps` of kind audio), parsed and validated.

Each step is a frozen dataclass that parses itself and says itself back in the manifest's own words (`words`),
keeping the keys in the order the manifest wrote them, so that the explanations quote the manifest. Its
kernel (pipeline.py) and its one-edit changes (explain.py) are registered to it in REGISTRY.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, TypeVar

from checker.preprocess.errors import PreprocessError
from checker.preprocess.registry import Registry

MAX_SAMPLES = 1 << 26  # samples over every channel: 23 minutes of 48 kHz stereo, 256 MiB as float32
MAX_RATE = 768_000
MAX_REPEAT = 1024
QUALITIES = ("QQ", "LQ", "MQ", "HQ", "VHQ")  # soxr's own names
POSITIONS = ("start", "end", "center")  # where the signal sits (pad), or which part is kept (trim)
NORMALIZE_MODES = ("zero_mean_unit_var", "peak")
LETTERS = "NCTF"  # batch, channel, time (samples, or frames after `frames`), frame samples

S = TypeVar("S", bound="AudioStep")


def _flow(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return str(value)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PreprocessError(f"{where}: {value!r} is not a finite number")
    return float(value)


@dataclass(frozen=True)
class AudioStep:
    """Common to every audio step: its name, and the parameters as the manifest wrote them (the keys in its
    order, or the one value of a `name: value` step). A parameter keeps the value written (an integer stays
    one), so that `words` quotes the manifest."""

    written: tuple[str, ...] = ()  # the keys the manifest gave, in its order
    as_scalar: bool = False  # written as `name: value`
    name: ClassVar[str] = ""
    scalar: ClassVar[str] = ""  # the parameter a `name: value` step sets; "" when the step takes a mapping only
    numeric_scalar: ClassVar[bool] = False  # whether that value must be a finite number
    integers: ClassVar[dict[str, int]] = {}  # integer parameters and their upper bounds (from 1)
    numbers: ClassVar[tuple[str, ...]] = ()  # parameters that must be finite numbers
    required: ClassVar[str] = ""  # a parameter the step needs

    def words(self) -> str:
        """The step in the manifest's own words, e.g. `resample: {rate: 16000}`."""
        if self.as_scalar:
            return f"`{self.name}: {_flow(getattr(self, self.scalar))}`"
        return f"`{self.name}: {_flow({k: getattr(self, k) for k in self.written})}`"

    def changed(self: S, **params: Any) -> S:
        """The step with `params` set, written as a mapping: its written keys, then the new ones."""
        keys = () if self.as_scalar else self.written
        return replace(self, **params, written=(*keys, *(k for k in params if k not in keys)), as_scalar=False)

    @classmethod
    def parse(cls: type[S], value: Any, where: str) -> S:
        """The step from its manifest value, with the types and bounds it needs checked before a file is read;
        a manifest reaching `checker preprocess` has not met the schema."""
        if not isinstance(value, Mapping):
            if not cls.scalar:
                raise PreprocessError(f"{where} takes a mapping of parameters, not {value!r}")
            if cls.numeric_scalar:
                _number(value, where)
            step = cls(as_scalar=True, **{cls.scalar: value})
            step.check(where)
            return step
        known = [f.name for f in fields(cls) if f.name not in ("written", "as_scalar")]
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise PreprocessError(f"{where} has unknown parameter(s) {', '.join(unknown)}; expected {', '.join(known)}")
        for key, high in cls.integers.items():
            v = value.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= high):
                raise PreprocessError(f"{where}: `{key}` is {v!r}; expected an integer from 1 to {high}")
        for key in cls.numbers:
            if value.get(key) is not None:
                _number(value[key], f"{where} `{key}`")
        if cls.required and value.get(cls.required) is None:
            raise PreprocessError(f"{where} needs `{cls.required}`")
        given = {k: v for k, v in value.items() if v is not None}
        step = cls(written=tuple(str(k) for k in value), **given)
        step.check(where)
        return step

    def check(self, where: str) -> None:
        """What the step's parameters need together (beyond each one's type)."""


@dataclass(frozen=True)
class Decode(AudioStep):
    library: str = "soundfile"
    name = "decode"


@dataclass(frozen=True)
class Mix(AudioStep):
    to: str = "mono"
    name = "mix"
    scalar = "to"


@dataclass(frozen=True)
class Resample(AudioStep):
    rate: int = 0
    library: str = "soxr"
    quality: str = "HQ"
    name = "resample"
    integers = {"rate": MAX_RATE}
    required = "rate"


@dataclass(frozen=True)
class Gain(AudioStep):
    db: float = 0.0
    name = "gain"
    scalar = "db"
    numeric_scalar = True
    numbers = ("db",)


@dataclass(frozen=True)
class Scale(AudioStep):
    factor: float = 1.0
    name = "scale"
    scalar = "factor"
    numeric_scalar = True


@dataclass(frozen=True)
class Normalize(AudioStep):
    mode: str | None = None  # None: the fixed mean and std
    mean: Any = 0.0  # one number, or one per channel
    std: Any = 1.0
    epsilon: float = 1e-7
    name = "normalize"
    scalar = "mode"
    numbers = ("epsilon",)


@dataclass(frozen=True)
class Pad(AudioStep):
    to: int | None = None
    at_least: int | None = None
    position: str = "start"
    value: float = 0.0
    name = "pad"
    integers = {"to": MAX_SAMPLES, "at_least": MAX_SAMPLES}
    numbers = ("value",)

    def check(self, where: str) -> None:
        if (self.to is None) == (self.at_least is None):
            raise PreprocessError(f"{where} needs one of `to` and `at_least`")


@dataclass(frozen=True)
class Trim(AudioStep):
    to: int = 0
    position: str = "start"
    name = "trim"
    integers = {"to": MAX_SAMPLES}
    required = "to"


@dataclass(frozen=True)
class Frames(AudioStep):
    size: int = 0
    hop: int | None = None  # None: the size (windows side by side)
    name = "frames"
    integers = {"size": MAX_SAMPLES, "hop": MAX_SAMPLES}
    required = "size"


@dataclass(frozen=True)
class Batch(AudioStep):
    repeat: int = 1
    name = "batch"
    integers = {"repeat": MAX_REPEAT}


@dataclass(frozen=True)
class Layout(AudioStep):
    layout: Any = ""
    name = "layout"
    scalar = "layout"

    @classmethod
    def parse(cls, value: Any, where: str) -> Layout:
        if not isinstance(value, str) or not set(value) <= set(LETTERS):
            raise PreprocessError(f"{where}: {value!r} is not a layout of the letters {LETTERS}")
        return cls(as_scalar=True, layout=value)


@dataclass(frozen=True)
class Cast(AudioStep):
    dtype: Any = "float32"
    name = "cast"
    scalar = "dtype"


# Every audio step, in the order docs/preprocessing.md lists them.
STEPS: tuple[type[AudioStep], ...] = (
    Decode,
    Mix,
    Resample,
    Gain,
    Scale,
    Normalize,
    Pad,
    Trim,
    Frames,
    Batch,
    Layout,
    Cast,
)
STEP_NAMES = tuple(step.name for step in STEPS)
_BY_NAME = {step.name: step for step in STEPS}
REGISTRY: Registry[AudioStep] = Registry("audio", STEPS)


def parse_steps(raw: Any) -> tuple[AudioStep, ...]:
    """The validated step list, beginning with its decode (`{}` when the manifest has none)."""
    if not isinstance(raw, list) or not raw:
        raise PreprocessError("an audio input is rebuilt from its `steps`, and it declares none")
    steps = tuple(parse_step(item, i) for i, item in enumerate(raw))
    if any(isinstance(s, Decode) for s in steps[1:]):
        raise PreprocessError("`decode` must be the first step")
    if not isinstance(steps[0], Decode):
        steps = (Decode(), *steps)
    return steps


def parse_step(item: Any, index: int) -> AudioStep:
    if not isinstance(item, Mapping) or len(item) != 1:
        raise PreprocessError(f"steps[{index}] must be a mapping with exactly one key, the step's name")
    ((name, value),) = item.items()
    step_type = _BY_NAME.get(name) if isinstance(name, str) else None
    if step_type is None:
        raise PreprocessError(f"steps[{index}]: unknown audio step {name!r}; known: {', '.join(STEP_NAMES)}")
    return step_type.parse(value if value is not None else {}, f"steps[{index}] `{name}`")
