"""Greedy non-maximum suppression, as torchvision's `nms`/`batched_nms` and Ultralytics' `non_max_suppression` do:
the best-scoring box is kept and every box overlapping it by more than `iou` is dropped, then the next; with
`class_aware`, boxes of different classes never suppress each other."""

from __future__ import annotations

import numpy as np

from checker.answers.boxes import areas


def nms(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou: float, class_aware: bool, limit: int
) -> np.ndarray:
    """Indices of the kept boxes, best first, at most `limit` of them. Ties in score keep the earlier box."""
    order = np.argsort(-np.asarray(scores, np.float64), kind="stable")
    boxes = np.asarray(boxes, np.float64)
    area = areas(boxes)
    keep: list[int] = []
    while order.size and len(keep) < limit:
        best, rest = int(order[0]), order[1:]
        keep.append(best)
        if not rest.size:
            break
        x1 = np.maximum(boxes[best, 0], boxes[rest, 0])
        y1 = np.maximum(boxes[best, 1], boxes[rest, 1])
        x2 = np.minimum(boxes[best, 2], boxes[rest, 2])
        y2 = np.minimum(boxes[best, 3], boxes[rest, 3])
        inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
        union = area[best] + area[rest] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            overlap = np.where(union > 0, inter / union, 0.0)
        suppressed = overlap > iou
        if class_aware:
            suppressed &= classes[rest] == classes[best]
        order = rest[~suppressed]
    return np.asarray(keep, dtype=np.int64)
