"""A decoded raw image and the input it makes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.build import build_decoded
from checker.preprocess.image.decode import Decoded
from checker.preprocess.image.pipeline import Memo, planned_size, run
from checker.preprocess.image.spec import ImageSpec
from checker.preprocess.image.steps import Step
from checker.preprocess.kind import Target


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

    @property
    def tolerance(self) -> float:
        return self.spec.tolerance_value

    def build(self, spec: ImageSpec | None = None) -> dict[str, np.ndarray]:
        # The declared steps run first, once per raw file, and nearly always match: without the memo they keep
        # no prefix and may overwrite their own pixels. Explanations, which run only on a mismatch, fill it.
        memo = self.memo if spec is not None or self.declared_built else None
        self.declared_built = self.declared_built or spec is None
        tensor = build_decoded(spec or self.spec, self.decoded, self.layout, self.target.dtype, memo)
        return {self.target.name: tensor}

    def build_steps(self, steps: tuple[Step, ...], size: tuple[int, int] | None = None) -> np.ndarray:
        """The tensor a variation of the declared step list makes (as precisely as the declared one). With
        `size`, the stored tensor's height and width: a variation whose sizes alone say it makes another size is
        refused before it touches a pixel (left without its crop, a 50-megapixel image would be made float whole
        for nothing)."""
        if size is not None:
            planned = planned_size(steps, self.decoded)
            if planned is not None and planned != size:
                raise PreprocessError(f"these steps make a {planned[0]}x{planned[1]} image, not {size[0]}x{size[1]}")
        return run(steps, self.decoded, self.layout, self.target.dtype, self.memo, float64=self.spec.steps is None)
