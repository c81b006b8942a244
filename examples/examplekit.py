"""What the example scripts share: the int8 variant made by onnxruntime's static quantization, and the manifest
written and locked. Each script keeps what makes its example its own (the graph, the photos, the reference)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx


def quantize(src: Path, dst: Path, input_name: str, tensors: list[np.ndarray], **settings: Any) -> None:
    """`src` quantized by quantize_static in QDQ format (uint8 activations, int8 weights), calibrated on `tensors`
    fed to `input_name`; `settings` are quantize_static's others (per_channel, nodes_to_exclude). The quantizer
    writes beside its input, so it works on a staged copy."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.items = iter([{input_name: t} for t in tensors])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.items, None)

    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "model.onnx"
        shutil.copy(src, staged)
        out = Path(tmp) / "model.int8.onnx"
        quantize_static(
            str(staged), str(out), Reader(), quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, **settings,
        )  # fmt: skip
        onnx.save(onnx.load(str(out)), str(dst))


def write_and_lock(out: Path, manifest: str, cases: str) -> None:
    """The manifest with this machine's onnx and onnxruntime versions and the cases filled in, then locked."""
    import onnxruntime

    from checker.release.lock import lock

    text = manifest.format(onnx_version=onnx.__version__, ort_version=onnxruntime.__version__, cases=cases)
    (out / "bundle.yaml").write_text(text)
    result = lock(out)
    if not result.ok:
        raise SystemExit("\n".join(result.messages))
