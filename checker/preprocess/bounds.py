"""What a preprocessing block may make the checker allocate, judged from the sizes it declares.

A manifest is hostile: a 4096 x 4096 crop is small to write but costs gigabytes of float64 work arrays and
tens of seconds. Every image step's output size is checked here before the step allocates it.
"""

from __future__ import annotations

from checker.manifest.model.image import MAX_SIDE
from checker.preprocess.errors import PreprocessError

# One image tensor as float32 (height x width x channels x 4 bytes) may take at most this much: 64 MiB
# admits 2048 x 2048 RGB and 4096 x 4096 grey, more than edge vision models take, and keeps the float64
# work arrays of one image well under a gigabyte.
MAX_IMAGE_BYTES = 64 << 20
BYTES_PER_VALUE = 4


def image_bytes(height: int, width: int, channels: int) -> int:
    return height * width * max(channels, 1) * BYTES_PER_VALUE


def check_image_size(height: int, width: int, channels: int, step: str) -> None:
    """Refuse, before allocating, a step whose output image would exceed MAX_IMAGE_BYTES as float32."""
    need = image_bytes(height, width, channels)
    if need > MAX_IMAGE_BYTES:
        raise PreprocessError(
            f"the {step} step would make a {height}x{width}x{channels} image, {need >> 20} MiB as float32; "
            f"at most {MAX_IMAGE_BYTES >> 20} MiB"
        )


# The largest tensor image a manifest can ask for: 4096 x 4096.
MAX_OUTPUT_PIXELS = 1 << 24


def check_size(size: tuple[int, int], step: str, channels: int) -> None:
    """The bound on what a manifest can make us allocate: a step's output image, before it is made."""
    h, w = size
    if h > MAX_SIDE or w > MAX_SIDE or h * w > MAX_OUTPUT_PIXELS:
        raise PreprocessError(f"the {step} step would make a {h}x{w} image, more than {MAX_OUTPUT_PIXELS} pixels")
    check_image_size(h, w, channels, step)
