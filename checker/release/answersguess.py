"""The `answers:` block `checker init` proposes where the graph says enough: a detector's `[batch, 4 + C, N]` or
`[batch, N, 4 + C]` output (C the class names in the metadata, or Ultralytics' `task: detect`), and a sentence
encoder's `[batch, seq, hidden]` output beside an `attention_mask` input. Each proposal carries the reason for it,
which `checker init` writes beside the block, so that it is checked against what the application does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checker.release.graphfacts import GraphFacts
from checker.release.guess import image_layout


@dataclass(frozen=True)
class Proposal:
    answer: dict[str, Any]
    why: str


def propose(facts: GraphFacts) -> list[Proposal]:
    out = [p for p in (_detector(facts), _encoder(facts)) if p is not None]
    return out


def _detector(facts: GraphFacts) -> Proposal | None:
    classes = len(facts.labels.labels) if facts.labels is not None else None
    detect = facts.metadata.get("task") == "detect"
    images = [s.name for s in facts.inputs if image_layout(s.shape) is not None]
    for spec in facts.outputs:
        shape = spec.shape or ()
        if len(shape) != 3:
            continue
        width, rows = shape[1], shape[2]  # rows: the anchors, often a dynamic dim (an expression of the input's)
        if classes is not None and width == 4 + classes:
            steps: list[Any] = [{"transpose": [0, 2, 1]}]
        elif classes is not None and rows == 4 + classes and (not isinstance(width, int) or width > rows):
            steps = []
        elif detect and isinstance(width, int) and width > 4 and (not isinstance(rows, int) or rows > width):
            steps = [{"transpose": [0, 2, 1]}]
        else:
            continue
        found = (width if steps else rows) - 4  # type: ignore[operator]
        decode: dict[str, Any] = {"layout": "yolo", "box_format": "cxcywh", "min_score": 0.25, "nms": {"iou": 0.7}}
        if images:
            decode["to_raw"] = images[0]
        answer: dict[str, Any] = {"name": "objects", "kind": "detections", "from": spec.name, "steps": steps,
                                  "decode": decode}  # fmt: skip
        if facts.labels is not None:
            answer["labels"] = {"metadata_key": facts.labels.key}
        axes = "[batch, 4 + classes, anchors]" if steps else "[batch, anchors, 4 + classes]"
        said = [f"'{spec.name}' is {axes}: 4 box values and {found} class scores"]
        said.append("per anchor" + (f" (Ultralytics {facts.metadata.get('task')})" if detect else ""))
        defaults = "; the threshold and NMS are Ultralytics' predict defaults (0.25, IoU 0.7): set the application's"
        return Proposal(answer, " ".join(said) + defaults)
    return None


def _encoder(facts: GraphFacts) -> Proposal | None:
    mask = next((s.name for s in facts.inputs if s.name.lower() == "attention_mask"), None)
    if mask is None:
        return None
    for spec in facts.outputs:
        shape = spec.shape or ()
        if len(shape) == 3 and isinstance(shape[2], int) and spec.dtype.startswith("float"):
            steps = [{"pool": {"mode": "mean", "axis": 1, "mask": mask}}, {"normalize": "l2"}]
            answer = {"name": "sentence", "kind": "embedding", "from": spec.name, "steps": steps}
            why = (
                f"'{spec.name}' is per token ({list(shape)}) beside '{mask}': mean pooling over the mask and L2 "
                "normalisation, as sentence-transformers does; check the application's pooling"
            )
            return Proposal(answer, why)
    return None
