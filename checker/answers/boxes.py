"""Box arithmetic in NumPy: formats to corners, intersection over union, clipping."""

from __future__ import annotations

import numpy as np

FORMATS = ("xyxy", "xywh", "cxcywh", "yxyx")


def to_xyxy(boxes: np.ndarray, box_format: str) -> np.ndarray:
    """[N, 4] boxes in `box_format` as corners x1, y1, x2, y2 (float64)."""
    b = np.asarray(boxes, np.float64).reshape(-1, 4)
    if box_format == "xyxy":
        result1: np.ndarray = b.copy()
        return result1
    if box_format == "yxyx":
        result2: np.ndarray = b[:, [1, 0, 3, 2]].copy()
        return result2
    if box_format == "xywh":
        return np.stack([b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]], axis=1)
    half_w, half_h = b[:, 2] / 2, b[:, 3] / 2
    return np.stack([b[:, 0] - half_w, b[:, 1] - half_h, b[:, 0] + half_w, b[:, 1] + half_h], axis=1)


def areas(b: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    return out


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[len(a), len(b)] intersection over union of corner boxes; two empty boxes overlap by 0."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    x1 = np.maximum(a[:, None, 0], b[None, :, 0])
    y1 = np.maximum(a[:, None, 1], b[None, :, 1])
    x2 = np.minimum(a[:, None, 2], b[None, :, 2])
    y2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    union = areas(a)[:, None] + areas(b)[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = np.where(union > 0, inter / union, 0.0)
    return out


def clip(boxes: np.ndarray, height: float, width: float) -> np.ndarray:
    out: np.ndarray = np.array(boxes, np.float64)
    out[:, [0, 2]] = np.clip(out[:, [0, 2]], 0, width)
    out[:, [1, 3]] = np.clip(out[:, [1, 3]], 0, height)
    return out
