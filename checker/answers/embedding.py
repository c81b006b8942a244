"""`kind: embedding`: one vector per item, made by the steps (pooling, normalising); judged by the lowest cosine over
items and by nearest-neighbour agreement over the whole slice (is each item's nearest neighbour kept?)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from checker.answers.errors import AnswerError
from checker.answers.items import Item
from checker.answers.kind import CaseMeasure, Edit, Env, Overall, bounded_numbers, per_item
from checker.manifest.model.answers import EmbeddingAnswer, EmbeddingRule
from checker.reports.parts.values import JsonValue

MAX_DIM = 1 << 20
SAME = 1e-4  # answer fidelity: every component within this times the stored vector's largest magnitude


def decode(answer: EmbeddingAnswer, tensors: Sequence[np.ndarray], env: Env, tweak: Any = None) -> list[Item]:
    x = tensors[0]
    if x.ndim > 2:
        raise AnswerError(
            f"answer '{answer.name}': an embedding is a vector per item, but the steps leave {list(x.shape)} "
            "(pool over the tokens: `pool: {mode: mean, axis: 1, mask: attention_mask}`)"
        )
    return [np.asarray(v, np.float64).reshape(-1) for v in per_item(x, 1, "an embedding")]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity; two zero vectors agree (1), one alone does not (0)."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("ij,ij->i", a, b) / (na * nb)
    out: np.ndarray = np.where((na > 0) & (nb > 0), cos, np.where((na == 0) & (nb == 0), 1.0, 0.0))
    result: np.ndarray = np.clip(out, -1.0, 1.0)
    return result


def measure(rule: EmbeddingRule, answer: EmbeddingAnswer, mine: list[Item], other: list[Item]) -> CaseMeasure:
    if not mine:
        return CaseMeasure(1.0, True, empty=True)
    a, b = np.stack([np.asarray(m) for m in mine]), np.stack([np.asarray(o) for o in other])
    if a.shape != b.shape:
        return CaseMeasure(
            0.0, False, note=f"vectors of shape {list(a.shape)} against {list(b.shape)}", items=len(mine)
        )
    low = float(cosines(a, b).min())
    ok = rule.min_cosine is None or low >= rule.min_cosine - 1e-12
    note = None if ok else f"cosine {low:.6g} (min {rule.min_cosine:g})"
    return CaseMeasure(low, ok, {"cosine": low}, note, [f"cosine {low:.4g}"] if not ok else [], items=len(mine))


def neighbours(vectors: np.ndarray, k: int) -> list[frozenset[int]]:
    """Each row's k nearest other rows by cosine (ties broken by the lower index)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1.0)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return [frozenset(int(j) for j in row) for row in order]


def overall(rule: EmbeddingRule, cases: Sequence[tuple[str, list[Item], list[Item], CaseMeasure]]) -> Overall | None:
    if rule.neighbours is None:
        return None
    names = [name for name, mine, _, _ in cases for _ in mine]
    mine = [np.asarray(v) for _, items, _, _ in cases for v in items]
    other = [np.asarray(v) for _, _, items, _ in cases for v in items]
    k = rule.neighbours.k
    if len(mine) <= k:
        return Overall(1.0, True, None, f"{len(mine)} item(s) in the slice: too few for {k} neighbour(s)")
    ours, theirs = neighbours(np.stack(mine), k), neighbours(np.stack(other), k)
    agree = [a == b for a, b in zip(ours, theirs)]
    share = sum(agree) / len(agree)
    cosine_ok = all(m.passed for *_, m in cases)
    ok = share >= rule.neighbours.min_agreement - 1e-12 and cosine_ok
    moved = [names[i] for i, same in enumerate(agree) if not same]
    worst = moved[0] if moved else min(cases, key=lambda c: c[3].figure)[0]
    note = None
    if moved:
        shown = ", ".join(f"'{n}'" for n in dict.fromkeys(moved[:5]))
        note = f"the {k} nearest neighbour(s) change for {len(moved)} of {len(agree)} item(s) ({shown})"
    if not cosine_ok:
        low = min(m.figure for *_, m in cases)
        note = "; ".join(x for x in (note, f"lowest cosine {low:.6g} (min {rule.min_cosine:g})") if x)
    return Overall(share, ok, worst, note)


def parse(value: Any, source: str) -> list[Item]:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu" or value.ndim not in (1, 2):
        raise AnswerError(f"{source}: an embedding answer is a .npy of numbers, [dim] or [items, dim]")
    if value.shape[-1] > MAX_DIM or not np.isfinite(value).all():
        raise AnswerError(f"{source}: the vectors must be finite, of at most {MAX_DIM} numbers")
    return [np.asarray(v, np.float64) for v in (value if value.ndim == 2 else value[None])]


def gap(decoded: list[Item], stored: list[Item]) -> str | None:
    if len(decoded) != len(stored):
        return f"the declared steps give {len(decoded)} vector(s), the stored answer {len(stored)}"
    for k, (d, s) in enumerate(zip(decoded, stored)):
        d, s = np.asarray(d), np.asarray(s)
        where = f"item {k}: " if len(decoded) > 1 else ""
        if d.shape != s.shape:
            return f"{where}the declared steps give a vector of {d.size}, the stored one has {s.size}"
        top = float(np.abs(d - s).max()) if d.size else 0.0
        if top > SAME * max(1.0, float(np.abs(s).max(initial=0.0))):
            cos = float(cosines(d[None], s[None])[0])
            norms = f"norm {np.linalg.norm(d):.4g} against {np.linalg.norm(s):.4g}"
            return f"{where}the vectors differ by up to {top:.4g} (cosine {cos:.6g}, {norms})"
    return None


def shown(items: list[Item]) -> list[JsonValue]:
    return [bounded_numbers(np.asarray(v)) for v in items]


def edits(answer: EmbeddingAnswer, env: Env) -> Iterator[Edit]:
    return iter(())


class EmbeddingKind:
    name = "embedding"
    rule = EmbeddingRule
    direction = "min"
    keeps_items = True
    wording = "has a lowest cosine of {v:.6g} (min {t:g})"
    decode = staticmethod(decode)
    overall = staticmethod(overall)
    parse = staticmethod(parse)
    measure = staticmethod(measure)
    gap = staticmethod(gap)
    shown = staticmethod(shown)
    edits = staticmethod(edits)

    @staticmethod
    def threshold(rule: EmbeddingRule) -> float:
        if rule.min_cosine is None and rule.neighbours is not None:
            return rule.neighbours.min_agreement
        return rule.min_cosine if rule.min_cosine is not None else -1.0


KIND = EmbeddingKind()
