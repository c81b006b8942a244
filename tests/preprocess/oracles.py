# ruff: noqa: SIM108, RUF046  (the packages' code is kept as they write it)
"""Application preprocessing, reproduced line for line from the packages that ship these ONNX models.

The packages themselves are large (models of tens of megabytes, and OpenCV builds of their own), so the tests
do not install them; each function below follows the named function of the named release, and the tests
store what these functions make as the reference tensors.
"""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
from PIL import Image


def ddddocr_classification(path: Path) -> np.ndarray:
    """ddddocr 1.6.1, ddddocr/core/ocr_engine.py (OCREngine._preprocess_image, default model): resize to
    height 64 with Pillow's LANCZOS, the width by `int(w * (64 / h))`; *then* grey; / 255.0."""
    image = Image.open(path)
    target_height = 64
    target_width = int(image.size[0] * (target_height / image.size[1]))
    image = image.resize((target_width, target_height), Image.LANCZOS)  # ImageProcessor.resize_image
    image = image.convert("L")  # ImageProcessor.convert_to_grayscale
    img_array = np.array(image).astype(np.float32)
    img_array = img_array / 255.0
    img_array = np.expand_dims(img_array, axis=0)
    return np.expand_dims(img_array, axis=0)


def _rapidocr_load(path: Path) -> np.ndarray:
    """rapidocr_onnxruntime 1.4.4, utils/load_image.py (LoadImage): Pillow decode, then RGB to BGR."""
    img = np.array(Image.open(path))
    return cv2.cvtColor(img, cv2.COLOR_RGB2BGR)


def rapidocr_recognizer(path: Path) -> np.ndarray:
    """rapidocr_onnxruntime 1.4.4, ch_ppocr_rec/text_recognize.py (TextRecognizer.__call__ for one line, then
    resize_norm_img with rec_img_shape [3, 48, 320]): ceil'd width, OpenCV linear resize, / 255, - 0.5, / 0.5,
    then zeros padded on the right up to at least 320 (mid-grey after normalising)."""
    img = _rapidocr_load(path)
    img_channel, img_height, img_width = 3, 48, 320
    h, w = img.shape[0:2]
    max_wh_ratio = max(img_width / img_height, w * 1.0 / h)
    img_width = int(img_height * max_wh_ratio)
    ratio = w / float(h)
    if math.ceil(img_height * ratio) > img_width:
        resized_w = img_width
    else:
        resized_w = int(math.ceil(img_height * ratio))
    resized_image = cv2.resize(img, (resized_w, img_height))
    resized_image = resized_image.astype("float32")
    resized_image = resized_image.transpose((2, 0, 1)) / 255
    resized_image -= 0.5
    resized_image /= 0.5
    padding_im = np.zeros((img_channel, img_height, img_width), dtype=np.float32)
    padding_im[:, :, 0:resized_w] = resized_image
    return padding_im[None]


def rapidocr_classifier_batch(path: Path, copies: int = 3) -> np.ndarray:
    """rapidocr_onnxruntime 1.4.4, ch_ppocr_cls/text_cls.py (TextClassifier.resize_norm_img, cls_image_shape
    [3, 48, 192]), with the batch filled by copies of the same crop, as an application checking one line's
    orientation does."""
    img = _rapidocr_load(path)
    img_c, img_h, img_w = 3, 48, 192
    h, w = img.shape[:2]
    ratio = w / float(h)
    if math.ceil(img_h * ratio) > img_w:
        resized_w = img_w
    else:
        resized_w = int(math.ceil(img_h * ratio))
    resized_image = cv2.resize(img, (resized_w, img_h))
    resized_image = resized_image.astype("float32")
    resized_image = resized_image.transpose((2, 0, 1)) / 255
    resized_image -= 0.5
    resized_image /= 0.5
    padding_im = np.zeros((img_c, img_h, img_w), dtype=np.float32)
    padding_im[:, :, :resized_w] = resized_image
    return np.stack([padding_im] * copies)


def opencv_lanczos(path: Path, size: int = 32) -> np.ndarray:
    """The common OpenCV classifier input: cv2.imread (BGR), cv2.resize with INTER_LANCZOS4, BGR to RGB,
    / 255, CHW (not from a particular package)."""
    img = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_COLOR)
    img = cv2.resize(img, (size, size), interpolation=cv2.INTER_LANCZOS4)
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    return (img.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
