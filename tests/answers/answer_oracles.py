"""The oracles the answers are tested against: PaddleOCR's own CTCLabelDecode (from the fetched paddleocr sources,
imported with a stand-in for `paddle`, which its greedy decoding never calls on NumPy input), Ultralytics'
documented `non_max_suppression` semantics written out independently (its module imports torch at load time, so it
cannot be run as source here), and sentence-transformers' Pooling and Normalize semantics in torch (its modules
import the whole package and transformers)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fetch_models import cached

PADDLE = "paddleocr-2.8.1"


def paddle_ctc_decoder(characters: list[str]) -> Any:
    """PaddleOCR 2.8.1's CTCLabelDecode over `characters` (its dict file, one per line, space char added)."""
    folder = cached(PADDLE)
    if folder is None:
        pytest.skip(f"run tests/fetch_models.py to fetch {PADDLE}")
    source = folder / "paddleocr" / "ppocr" / "postprocess" / "rec_postprocess.py"
    stub = types.ModuleType("paddle")
    stub.Tensor = type("Tensor", (), {})  # type: ignore[attr-defined]
    nn = types.ModuleType("paddle.nn")
    nn.functional = types.ModuleType("paddle.nn.functional")  # type: ignore[attr-defined]
    stub.nn = nn  # type: ignore[attr-defined]
    saved = {k: sys.modules.get(k) for k in ("paddle", "paddle.nn", "paddle.nn.functional")}
    sys.modules.update({"paddle": stub, "paddle.nn": nn, "paddle.nn.functional": nn.functional})  # type: ignore[attr-defined]
    try:
        spec = importlib.util.spec_from_file_location("paddle_rec_postprocess", source)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for key, value in saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value
    return module, source


def ctc_decode(characters: list[str], logits: np.ndarray, tmp: Path) -> list[str]:
    module, _ = paddle_ctc_decoder(characters)
    dict_path = tmp / "dict.txt"
    dict_path.write_text("\n".join(characters) + "\n", encoding="utf-8")
    decoder = module.CTCLabelDecode(character_dict_path=str(dict_path), use_space_char=True)
    return [text for text, _ in decoder(logits)]


def ultralytics_nms(
    boxes: np.ndarray, scores: np.ndarray, conf: float, iou: float, agnostic: bool, max_det: int
) -> list[tuple[int, int, float]]:
    """Ultralytics' non_max_suppression for one image, as its documentation and code describe it: candidates whose
    best class scores above `conf`; boxes offset by class * max_wh (7680) unless agnostic, so classes never overlap;
    torchvision.ops.nms (greedy, IoU strictly above `iou` suppresses); at most `max_det` kept. Returns (row, class,
    score) best first. Written out here with loops, independently of checker/answers/nms.py."""
    best = scores.max(axis=1)
    cls = scores.argmax(axis=1)
    rows = [i for i in range(len(best)) if best[i] > conf]
    offset = 0.0 if agnostic else 7680.0
    shifted = {i: boxes[i] + cls[i] * offset for i in rows}
    order = sorted(rows, key=lambda i: -best[i])
    kept: list[int] = []
    for i in order:
        if all(_iou(shifted[i], shifted[j]) <= iou for j in kept):
            kept.append(i)
        if len(kept) == max_det:
            break
    return [(i, int(cls[i]), float(best[i])) for i in kept]


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def sentence_transformers_pool(tokens: np.ndarray, mask: np.ndarray, mode: str, normalize: bool) -> np.ndarray:
    """sentence-transformers' Pooling (mean over the mask, cls at the first kept token, max over kept tokens) and
    Normalize (torch.nn.functional.normalize), in torch as its modules compute them."""
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(tokens.astype(np.float64))
    m = torch.from_numpy(mask.astype(np.int64))
    if mode == "mean":
        expanded = m.unsqueeze(-1).expand(t.size()).to(t.dtype)
        out = torch.sum(t * expanded, 1) / torch.clamp(expanded.sum(1), min=1e-9)
    elif mode == "cls":
        first = m.to(torch.int).argmax(dim=1)
        out = torch.gather(t, 1, first.unsqueeze(-1).unsqueeze(1).expand(-1, 1, t.shape[-1])).squeeze(1)
    else:
        expanded = m.unsqueeze(-1).expand_as(t).to(t.dtype)
        out = t.masked_fill(expanded == 0, float("-inf")).max(dim=1).values
    if normalize:
        out = torch.nn.functional.normalize(out, p=2, dim=-1)
    return out.numpy()
