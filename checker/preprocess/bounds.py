"""What a preprocessing block may make the checker allocate, judged from the sizes it declares.

A manifest is hostile: a 4096 x 4096 crop is small to write but costs gigabytes of float64 work arrays and
tens of seconds. Every image step's output size is checked here before the step allocates it.
"""

from __future__ import annotations

from checker.preprocess.errors import PreprocessError

# One image tensor as float32 (height x width x channels x 4 bytes) may take at most this much: 64 MiB
# admits 2048 x 2048 RGB, more than edge vision models take, and keeps the float64 work arrays of one
# image well under a gigabyte (a 4096 x 4096 crop took 1.6 GB and 38 s).
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
