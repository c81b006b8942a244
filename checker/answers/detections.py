"""`kind: detections`: boxes, labels and scores from a detector's rows, thresholded, suppressed and taken back to
the raw image; judged by greedy matching at an IoU (recall, precision, box shift, score drift)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker.answers import boxes as B
from checker.answers.errors import AnswerError
from checker.answers.items import Detection, Detections, Item
from checker.answers.kind import (
    MAX_CHANGES,
    MAX_SHOWN_DETECTIONS,
    CaseMeasure,
    Edit,
    Env,
    label_of,
    no_overall,
    per_item,
)
from checker.answers.nms import nms
from checker.answers.tensors import apply_function
from checker.manifest import views
from checker.manifest.model.answers import (
    MAX_DETECTIONS,
    Apply,
    DetectionsAnswer,
    DetectionsDecode,
    DetectionsRule,
    Nms,
)
from checker.reports.parts.values import JsonValue

BELOW = 100  # candidates under the threshold kept per item, to name the score a lost box fell to
MAX_ITEMS = 4096  # items of a stored answer
# Answer fidelity: a stored box is the decoded one at IoU 0.99, or within this many pixels per corner (an
# application that stores whole pixels truncates x and the width, which moves x2 by up to two); scores agree
# to a rounding at two decimals.
SAME_IOU = 0.99
SAME_PIXELS = 2.0
SAME_SCORE = 0.01


@dataclass(frozen=True)
class Tweak:
    """An edit inside the decoder that no field of the declaration can say: the scores through one more sigmoid
    (or one fewer), or the geometry undone twice or without its padding."""

    score: str | None = None  # "sigmoid" | "logit"
    geometry: str | None = None  # "twice" | "no_offset"


def _rows(answer: DetectionsAnswer, tensors: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per item: boxes [N, 4] as the graph gives them and class scores [N, C] (for `decoded`, [N, 2]: score and
    class)."""
    d = answer.decode
    if d.layout == "boxes_scores":
        if len(tensors) < 2:
            raise AnswerError(
                f"answer '{answer.name}': layout boxes_scores needs two outputs in `from`, boxes and scores"
            )
        boxes, scores = per_item(tensors[0], 2, "boxes"), per_item(tensors[1], 2, "scores")
        if len(boxes) != len(scores):
            raise AnswerError(f"answer '{answer.name}': {len(boxes)} items of boxes but {len(scores)} of scores")
        for b, s in zip(boxes, scores):
            if b.shape[-1] != 4 or b.shape[0] != s.shape[0]:
                raise AnswerError(
                    f"answer '{answer.name}': boxes {list(b.shape)} and scores {list(s.shape)} do not pair up as "
                    "[N, 4] and [N, classes]"
                )
        return [(b, s) for b, s in zip(boxes, scores)]
    first = {"yolo": 5, "yolo_objectness": 6, "decoded": 6}[d.layout]
    out = []
    for rows in per_item(tensors[0], 2, f"layout {d.layout}"):
        if rows.shape[-1] < first or (d.layout == "decoded" and rows.shape[-1] != 6):
            need = "6 (x1, y1, x2, y2, score, class)" if d.layout == "decoded" else f"at least {first}"
            raise AnswerError(
                f"answer '{answer.name}': rows of width {rows.shape[-1]} (shape {list(rows.shape)}) cannot be layout "
                f"{d.layout}, which needs {need}; a [batch, 4 + classes, N] output needs `transpose: [0, 2, 1]` first"
            )
        rows = np.asarray(rows, np.float64)
        if d.layout == "yolo":
            out.append((rows[:, :4], rows[:, 4:]))
        elif d.layout == "yolo_objectness":
            out.append((rows[:, :4], rows[:, 4:5] * rows[:, 5:]))
        else:
            out.append((rows[:, :4], rows[:, 4:6]))
    return out


def _classes(answer: DetectionsAnswer, scores: np.ndarray, labels: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best score and its class (the column less `class_offset`)."""
    d = answer.decode
    if d.layout == "decoded":
        return scores[:, 0], np.rint(scores[:, 1]).astype(np.int64) - d.class_offset
    columns = scores.shape[1] - d.class_offset
    if columns <= 0:
        raise AnswerError(f"answer '{answer.name}': class_offset {d.class_offset} leaves no class of {scores.shape[1]}")
    if labels is not None and columns != len(labels):
        raise AnswerError(
            f"answer '{answer.name}': the rows hold {columns} class scores after the box"
            f"{' and class_offset' if d.class_offset else ''}, but there are {len(labels)} labels (a layout whose "
            "width is not 4 + classes)"
        )
    real = scores[:, d.class_offset :]
    if real.shape[0] == 0:
        return np.zeros(0), np.zeros(0, np.int64)
    return real.max(axis=1), real.argmax(axis=1)


def decode(answer: DetectionsAnswer, tensors: Sequence[np.ndarray], env: Env, tweak: Tweak | None = None) -> list[Item]:
    d = answer.decode
    labels = env.labels()
    out: list[Item] = []
    for raw_boxes, scores in _rows(answer, tensors):
        best, cls = _classes(answer, scores, labels)
        if tweak is not None and tweak.score is not None:
            best = _rescore(best, tweak.score)
        best = np.where(np.isfinite(best), best, -np.inf)
        kept, below = _threshold(d, best)
        boxes = _corners(answer, raw_boxes, env)
        order = kept
        if d.nms is not None and kept.size:
            order = kept[nms(boxes[kept], best[kept], cls[kept], d.nms.iou, d.nms.class_aware, d.nms.max_detections)]
        else:
            order = kept[np.argsort(-best[kept], kind="stable")][:MAX_DETECTIONS]
        shown = _placed(d, boxes, env, tweak)
        out.append(
            Detections(
                tuple(Detection(_box(shown[i]), label_of(labels, int(cls[i])), float(best[i])) for i in order),
                tuple(Detection(_box(shown[i]), label_of(labels, int(cls[i])), float(best[i])) for i in below),
            )
        )
    return out


def _rescore(scores: np.ndarray, how: str) -> np.ndarray:
    if how == "sigmoid":
        return apply_function("sigmoid", scores, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.clip(scores, 1e-12, 1 - 1e-12)
        out: np.ndarray = np.log(p / (1 - p))
    return out


def _threshold(d: DetectionsDecode, best: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows above `min_score` (as Ultralytics: strictly above), and the best BELOW of the others."""
    above = best > d.min_score
    kept = np.flatnonzero(above)
    rest = np.flatnonzero(~above & np.isfinite(best))
    if rest.size > BELOW:
        rest = rest[np.argpartition(-best[rest], BELOW - 1)[:BELOW]]
    return kept, rest[np.argsort(-best[rest], kind="stable")]


def _corners(answer: DetectionsAnswer, raw_boxes: np.ndarray, env: Env) -> np.ndarray:
    d = answer.decode
    boxes = B.to_xyxy(raw_boxes, d.box_format)
    if d.normalized:
        h, w = env.input_size(d.to_raw)
        boxes[:, [0, 2]] *= w
        boxes[:, [1, 3]] *= h
    return boxes


def _placed(d: DetectionsDecode, boxes: np.ndarray, env: Env, tweak: Tweak | None) -> np.ndarray:
    if d.to_raw is None:
        return boxes
    place = env.placement(d.to_raw)
    geometry = tweak.geometry if tweak is not None else None
    if geometry == "no_offset":
        place = dataclasses.replace(place, offset=(0.0, 0.0))
    shown = place.to_raw(boxes)
    if geometry == "twice":
        shown = place.to_raw(shown)
    return shown


def _box(b: np.ndarray) -> tuple[float, float, float, float]:
    return (float(b[0]), float(b[1]), float(b[2]), float(b[3]))


# Stored answers.


def parse(value: Any, source: str) -> list[Item]:
    if not isinstance(value, list):
        raise AnswerError(f"{source}: a detections answer is a JSON array of {{box, label, score}} (or of such arrays)")
    nested = bool(value) and all(isinstance(v, list) for v in value)
    items = value if nested else [value]
    if len(items) > MAX_ITEMS:
        raise AnswerError(f"{source}: {len(items)} items; at most {MAX_ITEMS}")
    return [Detections(tuple(_detection(d, f"{source}[{i}][{j}]" if nested else f"{source}[{j}]") for j, d in
                             enumerate(_bounded(item, source)))) for i, item in enumerate(items)]  # fmt: skip


def _bounded(item: Any, source: str) -> list[Any]:
    if not isinstance(item, list):
        raise AnswerError(f"{source}: an item's detections must be an array")
    if len(item) > MAX_DETECTIONS:
        raise AnswerError(f"{source}: {len(item)} detections in an item; at most {MAX_DETECTIONS}")
    return item


def _detection(value: Any, where: str) -> Detection:
    if not isinstance(value, dict) or set(value) - {"box", "label", "score"} or not {"box", "label"} <= set(value):
        raise AnswerError(f'{where}: a detection is {{"box": [x1, y1, x2, y2], "label": ..., "score": ...}}')
    box, label, score = value["box"], value["label"], value.get("score", math.nan)
    if not isinstance(box, list) or len(box) != 4 or not all(_finite(v) for v in box):
        raise AnswerError(f"{where}: box must be four finite numbers [x1, y1, x2, y2]")
    if not isinstance(label, (str, int)) or isinstance(label, bool) or len(str(label)) > 1024:
        raise AnswerError(f"{where}: label must be a string (at most 1024 characters)")
    if "score" in value and not _finite(score):
        raise AnswerError(f"{where}: score must be a finite number")
    return Detection((float(box[0]), float(box[1]), float(box[2]), float(box[3])), str(label), float(score))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# Matching.


@dataclass
class Matched:
    pairs: list[tuple[Detection, Detection]]  # (mine, other)
    lost: list[Detection]  # the other side's, unmatched
    gained: list[Detection]  # mine, unmatched


def match(mine: Sequence[Detection], other: Sequence[Detection], iou: float) -> Matched:
    """Greedy by score: each of my boxes, best first, takes the unmatched box of the other side with the same label
    and the highest IoU at or above `iou`."""
    pairs: list[tuple[Detection, Detection]] = []
    taken = [False] * len(other)
    gained = []
    if mine and other:
        overlaps = B.iou_matrix(np.asarray([d.box for d in mine]), np.asarray([d.box for d in other]))
    for i in sorted(range(len(mine)), key=lambda k: -_score(mine[k])):
        best, at = -1.0, -1
        for j, o in enumerate(other):
            if not taken[j] and o.label == mine[i].label and overlaps[i, j] >= iou and overlaps[i, j] > best:
                best, at = float(overlaps[i, j]), j
        if at >= 0:
            taken[at] = True
            pairs.append((mine[i], other[at]))
        else:
            gained.append(mine[i])
    return Matched(pairs, [o for j, o in enumerate(other) if not taken[j]], gained)


def _score(d: Detection) -> float:
    return d.score if math.isfinite(d.score) else -math.inf


def shift(a: Detection, b: Detection) -> float:
    return max(abs(x - y) for x, y in zip(a.box, b.box))


def measure(rule: DetectionsRule, answer: DetectionsAnswer, mine: list[Item], other: list[Item]) -> CaseMeasure:
    matched_n = mine_n = other_n = 0
    worst_shift = worst_drift = 0.0
    changes: list[str] = []
    for m, o in zip(_kept(mine), _kept(other)):
        found = match(m.kept, o.kept, rule.iou)
        matched_n, mine_n, other_n = matched_n + len(found.pairs), mine_n + len(m.kept), other_n + len(o.kept)
        for a, b in found.pairs:
            worst_shift = max(worst_shift, shift(a, b))
            if math.isfinite(a.score) and math.isfinite(b.score):
                worst_drift = max(worst_drift, abs(a.score - b.score))
            if rule.max_shift is not None and shift(a, b) > rule.max_shift:
                changes.append(f"moves '{a.label}' by {shift(a, b):.3g} px")
        changes.extend(describe(found, m, o, rule.iou))
    recall = matched_n / other_n if other_n else 1.0
    precision = matched_n / mine_n if mine_n else 1.0
    figures = {"recall": recall, "precision": precision, "shift_px": worst_shift, "score_drift": worst_drift}
    bounds = [
        ("recall", recall >= rule.min_recall - 1e-12, f"recall {recall:.4g} (min {rule.min_recall:g})"),
        (
            "precision",
            precision >= rule.min_precision - 1e-12,
            f"precision {precision:.4g} (min {rule.min_precision:g})",
        ),
    ]
    if rule.max_shift is not None:
        bounds.append(
            ("shift", worst_shift <= rule.max_shift, f"a box moved {worst_shift:.4g} px (max {rule.max_shift:g})")
        )
    if rule.max_score_drift is not None:
        bounds.append(
            (
                "drift",
                worst_drift <= rule.max_score_drift,
                f"a score moved {worst_drift:.4g} (max {rule.max_score_drift:g})",
            )
        )
    failed = [words for _, ok, words in bounds if not ok]
    return CaseMeasure(
        figure=min(recall, precision),
        passed=not failed,
        figures=figures,
        note="; ".join(failed) or None,
        changes=changes,
        empty=other_n == 0 and mine_n == 0,
        items=len(mine),
    )


def _kept(items: list[Item]) -> list[Detections]:
    return [i if isinstance(i, Detections) else Detections(()) for i in items]


def describe(found: Matched, mine: Detections, other: Detections, iou: float) -> Iterator[str]:
    """What changed, in the product's words: a box lost or gained (with the score it fell to or rose from), or a
    box whose label changed."""
    gained = list(found.gained)
    for lost in found.lost:
        relabel = _overlapping(lost, gained, iou, same_label=False)
        if relabel is not None:
            gained.remove(relabel)
            yield f"'{lost.label}' {lost.score:.3g} becomes '{relabel.label}' {relabel.score:.3g}"
            continue
        under = _overlapping(lost, list(mine.below), iou, same_label=True)
        yield (
            f"loses '{lost.label}' ({lost.score:.3g} → {under.score:.3g})"
            if under
            else f"loses '{lost.label}' ({lost.score:.3g})"
        )
    for new in gained:
        under = _overlapping(new, list(other.below), iou, same_label=True)
        yield (
            f"gains '{new.label}' ({under.score:.3g} → {new.score:.3g})"
            if under
            else f"gains '{new.label}' ({new.score:.3g})"
        )


def _overlapping(box: Detection, among: list[Detection], iou: float, same_label: bool) -> Detection | None:
    if not among:
        return None
    overlaps = B.iou_matrix(np.asarray([box.box]), np.asarray([d.box for d in among]))[0]
    fits = [
        (overlaps[k], d) for k, d in enumerate(among) if overlaps[k] >= iou and (d.label == box.label) == same_label
    ]
    return max(fits, key=lambda t: (t[0], t[1].score))[1] if fits else None


# Answer fidelity.


def gap(decoded: list[Item], stored: list[Item]) -> str | None:
    if len(decoded) != len(stored):
        return f"the declared steps give {len(decoded)} item(s), the stored answer {len(stored)}"
    problems = []
    for k, (d, s) in enumerate(zip(_kept(decoded), _kept(stored))):
        lost, extra, moved = _strict(d.kept, s.kept)
        where = f"item {k}: " if len(decoded) > 1 else ""
        if lost or extra:
            problems.append(
                f"{where}the declared steps give {len(d.kept)} detection(s), the stored answer {len(s.kept)}"
                + (f"; not stored: {_few(lost)}" if lost else "")
                + (f"; stored only: {_few(extra)}" if extra else "")
            )
        elif moved:
            problems.append(f"{where}{moved}")
    return "; ".join(problems[:3]) or None


def _strict(
    mine: Sequence[Detection], stored: Sequence[Detection]
) -> tuple[list[Detection], list[Detection], str | None]:
    taken = [False] * len(stored)
    lost, moved = [], None
    overlaps = (
        B.iou_matrix(np.asarray([d.box for d in mine]), np.asarray([d.box for d in stored]))
        if mine and stored
        else None
    )
    for i, d in enumerate(mine):
        at = -1
        for j, s in enumerate(stored):
            if taken[j] or s.label != d.label or overlaps is None:
                continue
            if overlaps[i, j] >= SAME_IOU or shift(d, s) <= SAME_PIXELS:
                at = j
                break
        if at < 0:
            lost.append(d)
            continue
        taken[at] = True
        s = stored[at]
        if math.isfinite(s.score) and abs(s.score - d.score) > SAME_SCORE and moved is None:
            moved = f"'{d.label}' scores {d.score:.4g} by the declared steps, {s.score:.4g} as stored"
    return lost, [s for j, s in enumerate(stored) if not taken[j]], moved


def _few(found: Sequence[Detection]) -> str:
    shown = ", ".join(
        f"'{d.label}' {d.score:.3g} [{', '.join(f'{v:.0f}' for v in d.box)}]" for d in found[:MAX_CHANGES]
    )
    return shown + (f" and {len(found) - MAX_CHANGES} more" if len(found) > MAX_CHANGES else "")


def shown(items: list[Item]) -> list[JsonValue]:
    out: list[JsonValue] = []
    for item in _kept(items):
        entry: dict[str, Any] = {
            "detections": [
                {
                    "box": [round(v, 2) for v in d.box],
                    "label": d.label,
                    "score": round(d.score, 4) if math.isfinite(d.score) else None,
                }
                for d in item.kept[:MAX_SHOWN_DETECTIONS]
            ]
        }
        if len(item.kept) > MAX_SHOWN_DETECTIONS:
            entry["more"] = len(item.kept) - MAX_SHOWN_DETECTIONS
        out.append(entry)
    return out


def edits(answer: DetectionsAnswer, env: Env) -> Iterator[Edit]:
    d = answer.decode
    for fmt in B.FORMATS:
        if fmt != d.box_format:
            yield Edit(_with(answer, box_format=fmt), f"box_format {fmt} for {d.box_format}")
    state = "not normalized" if d.normalized else "normalized"
    yield Edit(
        _with(answer, normalized=not d.normalized), f"coordinates {state} (normalized: {str(not d.normalized).lower()})"
    )
    if d.to_raw is not None:
        yield Edit(
            _with(answer, to_raw=None),
            f"to_raw left out (boxes in the pixels of input '{d.to_raw}', the geometry not undone)",
        )
        yield Edit(answer, f"the geometry of '{d.to_raw}' undone twice", Tweak(geometry="twice"))
        yield Edit(
            answer, f"the padding of '{d.to_raw}' not removed (only the resize undone)", Tweak(geometry="no_offset")
        )
    else:
        for name in env.image_inputs():
            yield Edit(_with(answer, to_raw=name), f"to_raw: {name} (boxes taken back to the raw image)")
    for offset in (d.class_offset + 1, d.class_offset - 1):
        if offset >= 0:
            yield Edit(_with(answer, class_offset=offset), f"class_offset {offset} for {d.class_offset}")
    sigmoid = any(isinstance(s, Apply) and s.function == "sigmoid" for s in views.answer_steps(answer))
    once_more = "the scores through one more sigmoid (a sigmoid applied twice"
    once_more += ")" if sigmoid else ", or one the declaration lacks)"
    yield Edit(answer, once_more, Tweak(score="sigmoid"))
    if sigmoid:
        yield Edit(answer, "the declared sigmoid not applied by the application", Tweak(score="logit"))
    for score in (0.001, 0.05, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7):
        if not math.isclose(score, d.min_score):
            yield Edit(_with(answer, min_score=score), f"min_score {score:g} for {d.min_score:g}")
    if d.nms is None:
        for iou in (0.45, 0.5, 0.6, 0.7):
            yield Edit(
                _with(answer, nms=Nms(iou=iou)), f"nms {{iou: {iou:g}}} added (the application suppresses boxes)"
            )
        return
    yield Edit(_with(answer, nms=None), "nms left out (the application keeps overlapping boxes)")
    yield Edit(_with(answer, nms=dataclasses.replace(d.nms, class_aware=not d.nms.class_aware)),
               f"nms class_aware {str(not d.nms.class_aware).lower()}")  # fmt: skip
    for iou in (0.3, 0.4, 0.45, 0.5, 0.6, 0.65, 0.7, 0.8):
        if not math.isclose(iou, d.nms.iou):
            yield Edit(_with(answer, nms=dataclasses.replace(d.nms, iou=iou)), f"nms.iou {iou:g} for {d.nms.iou:g}")


def _with(answer: DetectionsAnswer, **changes: Any) -> DetectionsAnswer:
    return dataclasses.replace(answer, decode=dataclasses.replace(answer.decode, **changes))


class DetectionsKind:
    name = "detections"
    rule = DetectionsRule
    direction = "min"
    keeps_items = False
    wording = "has recall and precision {v:.4g} at IoU {iou:g} (min {t:g})"
    decode = staticmethod(decode)
    overall = staticmethod(no_overall)

    @staticmethod
    def threshold(rule: DetectionsRule) -> float:
        return min(rule.min_recall, rule.min_precision)

    parse = staticmethod(parse)
    measure = staticmethod(measure)
    gap = staticmethod(gap)
    shown = staticmethod(shown)
    edits = staticmethod(edits)


KIND = DetectionsKind()
