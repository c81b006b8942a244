"""Each image input's preprocessing as the ordered step list it runs (`checker preprocess --show-steps`)."""

from __future__ import annotations

from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.shorthand import spec_steps
from checker.preprocess.image.spec import ImageSpec
from checker.preprocess.image.steps import Layout
from checker.preprocess.layout import image_layout
from checker.preprocess.rebuild import Inputs


def show_steps(inputs: Inputs) -> list[str]:
    """YAML lines: for each image input, `steps:` as a manifest would write them."""
    lines: list[str] = []
    for entry in inputs.entries:
        name = entry.name
        if inputs.kind(name) != "image":
            continue
        lines.append(f"{name}:")
        try:
            spec = inputs.spec(name)
            assert isinstance(spec, ImageSpec)
            steps = spec_steps(spec)
            target = inputs.target(name)
            layout = image_layout(target.layout, target.shape)
        except PreprocessError as e:
            lines.append(f"  # the preprocessing cannot be read: {e}")
            continue
        origin = "declared steps" if spec.steps is not None else "the shorthand fields, expanded"
        lines.append(f"  # {origin}")
        lines.append("  steps:")
        lines.extend(f"    - {step.words()}" for step in steps)
        if not any(isinstance(s, Layout) for s in steps):
            lines.append(f"    - layout: {layout}  # the input's layout")
        lines.append(f"  # then cast to the input's dtype, {target.dtype}")
    if not lines:
        lines.append("# no input has image preprocessing")
    return lines
