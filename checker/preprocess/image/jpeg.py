"""The `jpeg` step's round trip: 8-bit pixels encoded as JPEG and decoded again by the application's library,
handed to it in their current channel order (Pillow takes three channels as RGB, OpenCV as BGR; either way
the same channels come back in the same places)."""

from __future__ import annotations

import io

import numpy as np

from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.resample import opencv, pillow

# Pillow's `subsampling` and OpenCV's IMWRITE_JPEG_SAMPLING_FACTOR for each of the manifest's words.
_PILLOW_SUBSAMPLING = {"4:4:4": 0, "4:2:2": 1, "4:2:0": 2}
_OPENCV_SUBSAMPLING = {"4:4:4": "IMWRITE_JPEG_SAMPLING_FACTOR_444", "4:2:2": "IMWRITE_JPEG_SAMPLING_FACTOR_422",
                       "4:2:0": "IMWRITE_JPEG_SAMPLING_FACTOR_420"}  # fmt: skip


def round_trip(img: np.ndarray, quality: int, subsampling: str, library: str) -> np.ndarray:
    """`img` (H x W x C, uint8, C 1 or 3) as the library gives it back after encoding it as JPEG."""
    if img.dtype != np.uint8:
        raise PreprocessError(
            f"jpeg encodes 8-bit pixels; the image holds {img.dtype} here (put jpeg before scale, normalize, cast)"
        )
    if img.shape[-1] not in (1, 3):
        raise PreprocessError(f"jpeg encodes one or three channels; the image has {img.shape[-1]} here")
    out = _opencv(img, quality, subsampling) if library == "opencv" else _pillow(img, quality, subsampling)
    return np.asarray(out, dtype=np.uint8).reshape(img.shape)


def _pillow(img: np.ndarray, quality: int, subsampling: str) -> np.ndarray:
    image = pillow()
    im = image.fromarray(img[..., 0] if img.shape[-1] == 1 else np.ascontiguousarray(img))
    with io.BytesIO() as buffer:
        try:
            im.save(buffer, format="JPEG", quality=quality, subsampling=_PILLOW_SUBSAMPLING[subsampling])
            buffer.seek(0)
            with image.open(buffer, formats=("JPEG",)) as back:
                return np.asarray(back)
        except (OSError, ValueError) as e:
            raise PreprocessError(f"Pillow cannot encode the image as JPEG: {e}") from e


def _opencv(img: np.ndarray, quality: int, subsampling: str) -> np.ndarray:
    cv2 = opencv("a jpeg step with library: opencv")
    params = [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_SAMPLING_FACTOR]
    params.append(getattr(cv2, _OPENCV_SUBSAMPLING[subsampling]))
    ok, encoded = cv2.imencode(".jpg", np.ascontiguousarray(img[..., 0] if img.shape[-1] == 1 else img), params)
    back = cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED) if ok else None
    if back is None:
        raise PreprocessError("OpenCV cannot encode the image as JPEG")
    return np.asarray(back)
