"""The pieces against their oracles: greedy NMS against torchvision's batched_nms and Ultralytics' semantics, box
formats, pooling and normalising against sentence-transformers', CTC against PaddleOCR's CTCLabelDecode, the
character error rate against jiwer, and to_raw against the preprocessing that made the tensor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from answer_oracles import ctc_decode, sentence_transformers_pool, ultralytics_nms

from checker.answers import boxes as B
from checker.answers.geometry import placement
from checker.answers.nms import nms
from checker.answers.tensors import run_steps
from checker.answers.text import ctc_greedy, distance
from checker.manifest.model.answers import Apply, Normalize, Pool, Select, Squeeze, Transpose


def random_boxes(seed: int, n: int = 300, classes: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 200, (n, 2))
    wh = rng.uniform(5, 60, (n, 2))
    boxes = np.concatenate([xy, xy + wh], axis=1)
    scores = rng.uniform(0, 1, (n, classes))
    return boxes, scores, scores.argmax(axis=1)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("class_aware", [True, False])
def test_nms_is_ultralytics_non_max_suppression(seed: int, class_aware: bool) -> None:
    boxes, scores, cls = random_boxes(seed)
    best = scores.max(axis=1)
    rows = np.flatnonzero(best > 0.25)
    kept = rows[nms(boxes[rows], best[rows], cls[rows], 0.45, class_aware, 300)]
    oracle = ultralytics_nms(boxes, scores, 0.25, 0.45, not class_aware, 300)
    assert [int(i) for i in kept] == [i for i, _, _ in oracle]


def test_nms_keeps_at_most_the_limit_best_first() -> None:
    boxes, scores, cls = random_boxes(7, n=500)
    kept = nms(boxes, scores.max(axis=1), cls, 0.7, True, 10)
    assert len(kept) == 10
    assert list(scores.max(axis=1)[kept]) == sorted(scores.max(axis=1)[kept], reverse=True)


@pytest.mark.parametrize("seed", range(4))
def test_nms_is_torchvision_batched_nms(seed: int) -> None:
    torch = pytest.importorskip("torch")
    ops = pytest.importorskip("torchvision.ops")
    boxes, scores, cls = random_boxes(seed, n=400, classes=6)
    best = scores.max(axis=1)
    ours = nms(boxes, best, cls, 0.5, True, 10_000)
    theirs = ops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(best), torch.from_numpy(cls), 0.5)
    assert [int(i) for i in ours] == [int(i) for i in theirs]
    agnostic = ops.nms(torch.from_numpy(boxes), torch.from_numpy(best), 0.5)
    assert [int(i) for i in nms(boxes, best, cls, 0.5, False, 10_000)] == [int(i) for i in agnostic]


def test_box_formats_reach_the_same_corners() -> None:
    corners = np.array([[10.0, 20.0, 50.0, 80.0]])
    assert np.allclose(B.to_xyxy(np.array([[30.0, 50.0, 40.0, 60.0]]), "cxcywh"), corners)
    assert np.allclose(B.to_xyxy(np.array([[10.0, 20.0, 40.0, 60.0]]), "xywh"), corners)
    assert np.allclose(B.to_xyxy(np.array([[20.0, 10.0, 80.0, 50.0]]), "yxyx"), corners)
    assert np.allclose(B.iou_matrix(corners, corners + np.array([0, 0, 40, 0])), [[0.5]])


@pytest.mark.parametrize("mode", ["mean", "cls", "max"])
@pytest.mark.parametrize("normalize", [True, False])
def test_pool_and_normalize_are_sentence_transformers(mode: str, normalize: bool) -> None:
    rng = np.random.default_rng(2)
    tokens = rng.normal(0, 1, (3, 9, 16))
    mask = np.ones((3, 9), np.int64)
    mask[0, 6:] = 0  # right padding
    mask[1, :2] = 0  # left padding: cls is the first kept token
    steps: list[Any] = [Pool(mode="first" if mode == "cls" else mode, axis=1, mask="attention_mask")]  # type: ignore[arg-type]
    if normalize:
        steps.append(Normalize())
    ours = run_steps(steps, {"h": tokens}, "h", {"attention_mask": mask})["h"]
    assert np.allclose(ours, sentence_transformers_pool(tokens, mask, mode, normalize), atol=1e-12)


def test_the_other_steps_do_what_numpy_does() -> None:
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    out = run_steps([Transpose(perm=[0, 2, 1]), Select(axis=-1, start=1)], {"x": x}, "x", {})["x"]
    assert np.array_equal(out, x.transpose(0, 2, 1)[..., 1:])
    assert run_steps([Select(axis=0, index=1), Squeeze(axis=0)], {"x": x[:, :1]}, "x", {})["x"].shape == (4,)
    soft = run_steps([Apply(function="softmax", axis=1)], {"x": x}, "x", {})["x"]
    assert np.allclose(soft.sum(axis=1), 1.0)
    zero = run_steps([Normalize()], {"x": np.zeros((1, 3))}, "x", {})["x"]
    assert np.array_equal(zero, np.zeros((1, 3)))  # a zero vector stays zero


def test_ctc_is_paddleocr_ctc_label_decode(tmp_path: Path) -> None:
    characters = list("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    labels = ["blank", *characters, " "]
    rng = np.random.default_rng(4)
    logits = rng.normal(0, 1, (8, 40, len(labels)))
    logits[:, ::3, 0] += 3  # blanks between characters, and repeats, as a recogniser gives them
    theirs = ctc_decode(characters, logits, tmp_path)
    ours = [ctc_greedy(item, labels, 0, merge_repeats=True) for item in logits]
    assert ours == theirs and any(len(t) > 5 for t in ours)


@pytest.mark.parametrize(
    ("reference", "hypothesis"),
    [("STOP", "ST0P"), ("kitchen", "kitchen"), ("hello world", "helo wrld!"), ("abc", ""), ("δοκιμή", "δοκιμη")],
)
def test_the_character_error_rate_is_jiwers(reference: str, hypothesis: str) -> None:
    import jiwer

    ours = distance(hypothesis, reference) / len(reference)
    assert ours == pytest.approx(jiwer.cer(reference, hypothesis))


def test_to_raw_undoes_the_letterbox_of_the_preprocessing() -> None:
    """A box around the image's content in the tensor goes back to the whole raw image."""
    from checker.preprocess.image.steps import Pad, Resize

    steps = (Resize(fit=(32, 32)), Pad(to=(32, 32)))
    place = placement(steps, 40, 64)  # 64 wide: 32 x 20 in the tensor, padded 6 rows above and below
    assert place.tensor == (32, 32)
    content = np.array([[0.0, 6.0, 32.0, 26.0]])
    assert np.allclose(place.to_raw(content), [[0.0, 0.0, 64.0, 40.0]])
    assert np.allclose(place.to_tensor(place.to_raw(content)), content)
