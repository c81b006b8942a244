"""From a manifest input and a raw file to the tensors it becomes (shared by the stage and the command)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from checker.errors import BundleError, Error, UsageError
from checker.preprocess.audio import AudioSpec, DecodeCache, Result, audio_layout, build_audio
from checker.preprocess.decode import Decoded, decode
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image import build_decoded
from checker.preprocess.layout import cast, image_layout, numpy_dtype
from checker.preprocess.pipeline import Memo, run
from checker.preprocess.spec_image import ImageSpec
from checker.preprocess.steps import Step
from checker.preprocess.text import TextSpec, build_text, read_text

REBUILT_KINDS = ("image", "text", "derived", "audio")


@dataclass(frozen=True)
class Target:
    """A manifest input that a raw file makes, and how its tensor is arranged."""

    name: str
    index: int  # its place in the manifest's `inputs`
    dtype: str
    layout: str | None
    shape: Any
    field: str = "ids"  # for text: which encoding array it holds


@dataclass
class ImageSource:
    """A decoded raw image and the input it makes; `build` can run variations of the declared spec."""

    spec: ImageSpec
    decoded: Decoded
    target: Target
    layout: str
    # What each prefix of a step list made: the explanations try many lists that begin alike.
    memo: Memo = field(default_factory=Memo)
    declared_built: bool = False

    def build(self, spec: ImageSpec | None = None) -> dict[str, np.ndarray]:
        # The declared steps run first, once per raw file, and nearly always match: without the memo they keep
        # no prefix and may overwrite their own pixels. Explanations, which run only on a mismatch, fill it.
        memo = self.memo if spec is not None or self.declared_built else None
        self.declared_built = self.declared_built or spec is None
        tensor = build_decoded(spec or self.spec, self.decoded, self.layout, self.target.dtype, memo)
        return {self.target.name: tensor}

    def build_steps(self, steps: tuple[Step, ...]) -> np.ndarray:
        """The tensor a variation of the declared step list makes (as precisely as the declared one)."""
        return run(steps, self.decoded, self.layout, self.target.dtype, self.memo, float64=self.spec.steps is None)


@dataclass
class TextSource:
    """A raw text and every input tokenized from it (the text input and the inputs derived from it)."""

    spec: TextSpec
    root: Path
    text: str
    targets: list[Target]
    line_break: str = ""  # the final line break the raw file ended in, dropped from `text`

    def build(self, spec: TextSpec | None = None, text: str | None = None) -> dict[str, np.ndarray]:
        encoding = build_text(spec or self.spec, self.root, self.text if text is None else text)
        return {t.name: token_tensor(encoding[t.field], t) for t in self.targets}


@dataclass
class AudioSource:
    """A raw audio file (decoded once per library) and the input its steps make."""

    spec: AudioSpec
    decoded: DecodeCache
    target: Target

    def result(self, spec: AudioSpec | None = None) -> Result:
        spec = spec or self.spec
        layout = audio_layout(self.target.layout, self.target.shape, spec)
        return build_audio(spec, self.decoded, layout, self.target.dtype)

    def build(self) -> dict[str, np.ndarray]:
        """The tensor; a rate or channel count other than the input declares is an error that says so."""
        made = self.result()
        for problem in rate_problems(self.spec, made):
            raise PreprocessError(problem)
        return {self.target.name: made.tensor}


def rate_problems(spec: AudioSpec, made: Result) -> list[str]:
    problems = []
    if spec.sample_rate is not None and made.rate != spec.sample_rate:
        how = (
            "after its resample step"
            if made.resampled
            else f"the file's own rate: no resample step brings it to {spec.sample_rate} Hz"
        )
        problems.append(
            f"the rebuilt signal is at {made.rate} Hz ({how}), but the input declares sample_rate {spec.sample_rate}"
        )
    if spec.channels is not None and made.channels != spec.channels:
        problems.append(
            f"the rebuilt signal has {made.channels} channel(s), but the input declares channels {spec.channels}"
            + (" (mix them with a `mix` step)" if made.channels > spec.channels else "")
        )
    return problems


Source = ImageSource | TextSource | AudioSource


@dataclass
class Inputs:
    """The manifest's inputs by name, with their parsed specs (parsed once, errors kept)."""

    entries: list[dict[str, Any]]
    root: Path
    _specs: dict[str, ImageSpec | TextSpec | AudioSpec | PreprocessError] = field(default_factory=dict)

    def entry(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.entries if e.get("name") == name), None)

    def index(self, name: str) -> int:
        return next(i for i, e in enumerate(self.entries) if e.get("name") == name)

    def kind(self, name: str) -> str | None:
        prep = (self.entry(name) or {}).get("preprocessing")
        return prep.get("kind") if isinstance(prep, dict) else None

    def source_name(self, name: str) -> str:
        """The input whose preprocessing makes `name`: itself, or the text input a derived one comes from."""
        if self.kind(name) != "derived":
            return name
        source = (self.entry(name) or {})["preprocessing"].get("from")
        if not isinstance(source, str) or self.kind(source) != "text":
            raise PreprocessError(f"input '{name}' is derived from {source!r}, which is not a text input")
        return source

    def spec(self, name: str) -> ImageSpec | TextSpec | AudioSpec:
        """The parsed spec of an image or text input; the same error again for a spec that failed."""
        if name not in self._specs:
            try:
                self._specs[name] = self._parse(name)
            except PreprocessError as e:
                self._specs[name] = e
        found = self._specs[name]
        if isinstance(found, PreprocessError):
            raise found
        return found

    def _parse(self, name: str) -> ImageSpec | TextSpec | AudioSpec:
        prep = (self.entry(name) or {}).get("preprocessing") or {}
        if self.kind(name) == "image":
            return ImageSpec.from_manifest(prep, self.root)
        if self.kind(name) == "audio":
            return AudioSpec.from_manifest(prep)
        return TextSpec.from_manifest(prep)

    def target(self, name: str, text_field: str = "ids") -> Target:
        e = self.entry(name) or {}
        return Target(
            name,
            self.index(name),
            str(e.get("dtype", "float32")),
            e.get("layout"),
            e.get("shape"),
            text_field,
        )

    def text_targets(self, source: str, only: str | None = None) -> list[Target]:
        """The text input `source` and the inputs derived from it (or only the one named `only`)."""
        out = []
        for e in self.entries:
            prep = e.get("preprocessing")
            prep = prep if isinstance(prep, dict) else {}
            name = e.get("name")
            if not isinstance(name, str) or (only is not None and name != only):
                continue
            if name == source or (prep.get("kind") == "derived" and prep.get("from") == source):
                out.append(self.target(name, str(prep.get("field", "ids"))))
        return out


def open_source(inputs: Inputs, name: str, raw: Path, raw_name: str, only_named: bool = False) -> Source | None:
    """The raw file `raw` read as input `name` declares; None for kinds that are not rebuilt (custom, and
    audio without `steps`).

    For a text input, the source also makes the inputs derived from it, unless `only_named`.
    """
    kind = inputs.kind(name)
    if kind not in REBUILT_KINDS or (kind == "audio" and not is_rebuilt_audio(inputs, name)):
        return None
    source = inputs.source_name(name)
    spec = inputs.spec(source)
    if isinstance(spec, AudioSpec):
        return AudioSource(spec, DecodeCache(raw, raw_name), inputs.target(name))
    if isinstance(spec, ImageSpec):
        target = inputs.target(name)
        layout = image_layout(target.layout, target.shape)
        return ImageSource(spec, decode(raw, raw_name), target, layout)
    text, line_break = _split_line_break(raw, raw_name)
    only = name if (only_named or kind == "derived") else None
    return TextSource(spec, inputs.root, text, inputs.text_targets(source, only), line_break)


def is_rebuilt_audio(inputs: Inputs, name: str) -> bool:
    """An audio input is rebuilt when it declares `steps`; without them its raw files are kept for a reader."""
    prep = (inputs.entry(name) or {}).get("preprocessing")
    return isinstance(prep, dict) and "steps" in prep


def _split_line_break(raw: Path, raw_name: str) -> tuple[str, str]:
    text = read_text(raw, raw_name)
    full = raw.read_bytes().decode("utf-8-sig", errors="replace")
    return text, full[len(text) :]


def token_tensor(values: np.ndarray, target: Target) -> np.ndarray:
    """A 1-D encoding array as the input holds it: a batch axis where the layout (or a 2-D shape) has one."""
    layout, shape = target.layout, target.shape
    if isinstance(layout, str) and "N" in layout:
        values = np.expand_dims(values, layout.index("N"))
    elif layout is None and not (isinstance(shape, list) and len(shape) == 1):
        values = values[None]
    return cast(values, numpy_dtype(target.dtype))


def rebuild_file(manifest_path: Path, root: Path, name: str, raw: Path, npz: bool = False) -> dict[str, Any]:
    """The tensors `raw` becomes as input `name` (with the inputs derived from it when `npz`)."""
    from checker.manifest.load import load_manifest
    from checker.preprocess.rebuild import Inputs, open_source

    manifest, found = load_manifest(manifest_path)
    if manifest is None:
        raise BundleError("; ".join(f.message for f in found) or f"{manifest_path} cannot be read")
    entries = [e for e in manifest.data.get("inputs") or [] if isinstance(e, dict)]
    inputs = Inputs(entries, root)
    if inputs.entry(name) is None:
        known = ", ".join(str(e.get("name")) for e in entries) or "none"
        raise UsageError(f"the manifest has no input '{name}' (its inputs: {known})")
    source = open_source(inputs, name, raw, raw.name, only_named=not npz)
    if source is None:
        kind = inputs.kind(name)
        raise Error(
            f"input '{name}' has preprocessing kind {kind!r}; only image, text and audio (with `steps`) "
            "inputs are rebuilt"
        )
    return source.build()
