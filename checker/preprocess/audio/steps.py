"""The ordered audio steps a manifest declares (`preprocessing.steps` of kind audio): the runtime steps, each
made from its typed block (`MODEL`, in checker/manifest/model/audio.py, whose fields, bounds and words the
schema is generated from).

Each step is a frozen dataclass that makes itself from its block and says itself back in the manifest's own
words (`words`), keeping the keys in the order the manifest wrote them, so that the explanations quote the
manifest. Its kernel (pipeline.py) and its one-edit changes (explain.py) are registered to it in REGISTRY.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, ClassVar, TypeVar, get_args

from checker.manifest.model import audio as m
from checker.manifest.model.core import Block, Keyed
from checker.preprocess.checked import checked
from checker.preprocess.errors import PreprocessError
from checker.preprocess.registry import Registry

MAX_SAMPLES = 1 << 26  # samples over every channel: 23 minutes of 48 kHz stereo, 256 MiB as float32
MAX_RATE = m.MAX_RATE
MAX_REPEAT = m.MAX_REPEAT
QUALITIES = get_args(m.Quality)
POSITIONS = get_args(m.Position)  # where the signal sits (pad), or which part is kept (trim)
NORMALIZE_MODES = get_args(m.NormalizeMode)
LETTERS = m.LETTERS

S = TypeVar("S", bound="AudioStep")


def _flow(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class AudioStep:
    """Common to every audio step: its name, and the parameters as the manifest wrote them (the keys in its
    order, or the one value of a `name: value` step). A parameter keeps the value written (an integer stays
    one), so that `words` quotes the manifest."""

    written: tuple[str, ...] = ()  # the keys the manifest gave, in its order
    as_scalar: bool = False  # written as `name: value`
    MODEL: ClassVar[type[Block]] = Block  # the step's block in the manifest model
    name: ClassVar[str] = ""  # its manifest name: the block's TAG
    scalar: ClassVar[str] = ""  # the parameter a `name: value` step sets: the block's SCALAR

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
    def from_model(cls: type[S], block: Any, where: str) -> S:
        """The step from its typed block, as the manifest wrote it (its keys, or its one value)."""
        if block.given is None:
            step = cls(as_scalar=True, **{cls.scalar: getattr(block, cls.scalar)})
        else:
            params = {f.name: getattr(block, f.name) for f in block.manifest_fields()}
            step = cls(written=block.given, **params)
        step.check(where)
        return step

    @classmethod
    def parse(cls: type[S], value: Any, where: str) -> S:
        """The step from its plain manifest value (`{rate: 16000}`, or `first` for mix), judged by the schema
        first: what reaches here outside a manifest has not met it."""
        return cls.from_model(checked(Annotated[cls.MODEL, Keyed()], {cls.name: value}, where), where)

    def check(self, where: str) -> None:
        """What the step's parameters need together (beyond what the schema says of each)."""


@dataclass(frozen=True)
class Decode(AudioStep):
    library: str = m.Decode.library
    MODEL = m.Decode
    name = m.Decode.TAG


@dataclass(frozen=True)
class Mix(AudioStep):
    to: str = m.Mix.to
    MODEL = m.Mix
    name = m.Mix.TAG
    scalar = m.Mix.SCALAR


@dataclass(frozen=True)
class Resample(AudioStep):
    rate: int = 0
    library: str = m.Resample.library
    quality: str = m.Resample.quality
    MODEL = m.Resample
    name = m.Resample.TAG


@dataclass(frozen=True)
class Gain(AudioStep):
    db: float = 0.0
    MODEL = m.Gain
    name = m.Gain.TAG
    scalar = m.Gain.SCALAR


@dataclass(frozen=True)
class Scale(AudioStep):
    factor: float = m.Scale.factor
    MODEL = m.Scale
    name = m.Scale.TAG
    scalar = m.Scale.SCALAR


@dataclass(frozen=True)
class Normalize(AudioStep):
    mode: str | None = None  # None: the fixed mean and std
    mean: Any = m.Normalize.mean  # one number, or one per channel
    std: Any = m.Normalize.std
    epsilon: float = m.Normalize.epsilon
    MODEL = m.Normalize
    name = m.Normalize.TAG
    scalar = m.Normalize.SCALAR


@dataclass(frozen=True)
class Pad(AudioStep):
    to: int | None = None
    at_least: int | None = None
    position: str = m.Pad.position
    value: float = m.Pad.value
    MODEL = m.Pad
    name = m.Pad.TAG

    def check(self, where: str) -> None:
        if (self.to is None) == (self.at_least is None):
            raise PreprocessError(f"{where} needs one of `to` and `at_least`")


@dataclass(frozen=True)
class Trim(AudioStep):
    to: int = 0
    position: str = m.Trim.position
    MODEL = m.Trim
    name = m.Trim.TAG


@dataclass(frozen=True)
class Frames(AudioStep):
    size: int = 0
    hop: int | None = None  # None: the size (windows side by side)
    MODEL = m.Frames
    name = m.Frames.TAG


@dataclass(frozen=True)
class Batch(AudioStep):
    repeat: int = 1
    MODEL = m.Batch
    name = m.Batch.TAG


@dataclass(frozen=True)
class Layout(AudioStep):
    layout: Any = ""
    MODEL = m.LayoutStep
    name = m.LayoutStep.TAG
    scalar = m.LayoutStep.SCALAR


@dataclass(frozen=True)
class Cast(AudioStep):
    dtype: Any = m.Cast.dtype
    MODEL = m.Cast
    name = m.Cast.TAG
    scalar = m.Cast.SCALAR


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
REGISTRY: Registry[AudioStep] = Registry("audio", STEPS)


_BY_MODEL: dict[type[Block], type[AudioStep]] = {step.MODEL: step for step in STEPS}


def parse_steps(raw: Any) -> tuple[AudioStep, ...]:
    """The validated step list given as plain data, judged by the steps' schema first."""
    return steps_of(checked(m.Steps, raw, "steps"))


def steps_of(blocks: list[Any]) -> tuple[AudioStep, ...]:
    """The runtime steps of typed step blocks, beginning with their decode (`{}` when the manifest has none)."""
    steps = tuple(_BY_MODEL[type(b)].from_model(b, f"steps[{i}] `{b.TAG}`") for i, b in enumerate(blocks))
    if any(isinstance(s, Decode) for s in steps[1:]):
        raise PreprocessError("`decode` must be the first step")
    if not isinstance(steps[0], Decode):
        steps = (Decode(), *steps)
    return steps
