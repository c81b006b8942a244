"""The image kind: what the stages ask of an image input (kind.Kind), from this package's modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from checker.manifest.model import image as m
from checker.preprocess.checked import checked
from checker.preprocess.image.decode import decode
from checker.preprocess.image.explain import image_alternatives
from checker.preprocess.image.files import read_block
from checker.preprocess.image.shorthand import spec_steps
from checker.preprocess.image.source import ImageSource
from checker.preprocess.image.spec import ImageSpec, parse_block
from checker.preprocess.image.steps import implied_range
from checker.preprocess.kind import ImpliedRange, Target
from checker.preprocess.layout import image_layout
from checker.preprocess.search import UNEXPLAINED, Search, explain


class ImageKind:
    name = "image"
    tokens = False
    relative_tolerance = False
    implies_range = True
    unexplained = UNEXPLAINED

    def parse(self, prep: m.Image | dict[str, Any], root: Path) -> ImageSpec:
        """The typed block (plain data, a test's, is judged by the schema first)."""
        block = prep if isinstance(prep, m.Image) else checked(m.Image, prep, "preprocessing")
        return parse_block(read_block(block, root))

    def rebuilds(self, spec: ImageSpec) -> bool:
        return True

    def open(self, spec: ImageSpec, targets: list[Target], raw: Path, raw_name: str, root: Path) -> ImageSource:
        target = targets[0]
        layout = image_layout(target.layout, target.shape)
        return ImageSource(spec, decode(raw, raw_name), target, layout)

    def implied_range(self, spec: ImageSpec, target: Target) -> ImpliedRange | None:
        layout = image_layout(target.layout, target.shape)
        if (
            spec.steps is None
            and spec.resize.library == "torch"
            and spec.resize.interpolation in ("bicubic", "lanczos")
        ):
            return None  # torch does not clamp: bicubic overshoots 0-255
        found = implied_range(spec_steps(spec))
        if found is None:
            return None
        low, high = found
        if spec.steps is None:  # the shorthand's per-channel lists make per-channel bounds, even equal ones
            n = max(len(spec.mean), len(spec.std), len(low))
            low, high = np.broadcast_to(low, (n,)), np.broadcast_to(high, (n,))
            why = f"scale {spec.scale:g}, mean {_list(spec.mean)}, std {_list(spec.std)}"
        else:
            why = "the declared steps (0-255 through their scale, normalize and pad values)"
        axis = layout.index("C") if len(low) > 1 and "C" in layout else None
        return ImpliedRange(low, high, axis, why)

    def explain(self, source: ImageSource, target: str, stored: np.ndarray, tolerance: float) -> Search:
        return explain(image_alternatives(source, stored, tolerance), stored)


def _list(values: tuple[float, ...]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


KIND = ImageKind()
