"""The seven pieces of a release. Judged defensively: it also runs on a manifest the schema rejected."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from checker import findings as F
from checker.context import Context
from checker.findings import PIECES, Finding

LABELLED_MEANINGS = ("logits", "probabilities", "scores")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _missing(ctx: Context, piece: str, why: str, *keys: str | int) -> Finding:
    ctx.pieces[piece] = False
    return F.error(F.MISSING_PIECE, f"missing piece '{piece}': {why}", **ctx.where(*keys), piece=piece)


def completeness_stage(ctx: Context) -> Iterator[Finding]:
    data = ctx.data
    ctx.pieces.update(dict.fromkeys(PIECES, True))
    graph = _dict(data.get("graph"))
    if not graph.get("path"):
        yield _missing(ctx, "graph", "graph.path names no .onnx file", "graph")
    yield from _preprocessing(ctx)
    yield from _labels(ctx)
    yield from _comparison(ctx)
    runtime = _dict(data.get("runtime"))
    absent = [k for k in ("name", "version") if not runtime.get(k)]
    if absent:
        yield _missing(ctx, "runtime", "runtime." + " and runtime.".join(absent) + " must be given", "runtime")
    if not _dict(data.get("validation")).get("command"):
        yield _missing(
            ctx,
            "validation_command",
            "validation.command (how the device validates the bundle) is not given",
            "validation",
        )


def _preprocessing(ctx: Context) -> Iterator[Finding]:
    inputs = _list(ctx.data.get("inputs"))
    if not inputs:
        yield _missing(ctx, "preprocessing", "no inputs are declared, so none says how it is made")
        return
    for i, entry in enumerate(inputs):
        entry = _dict(entry)
        if not _dict(entry.get("preprocessing")).get("kind"):
            name = entry.get("name", f"#{i}")
            yield _missing(ctx, "preprocessing", f"input '{name}' has no preprocessing", "inputs", i)


def _labels(ctx: Context) -> Iterator[Finding]:
    answered = _answer_labelled(ctx)
    for i, entry in enumerate(_list(ctx.data.get("outputs"))):
        entry = _dict(entry)
        name = entry.get("name")
        if isinstance(name, str) and name in answered:  # a manifest the schema refused may hold anything
            continue
        if entry.get("meaning") in LABELLED_MEANINGS and not _dict(entry.get("labels")):
            why = f"output '{entry.get('name')}' holds {entry.get('meaning')} but has no labels"
            yield _missing(ctx, "labels", why, "outputs", i)


def _answer_labelled(ctx: Context) -> set[str]:
    """Outputs an answer reads and labels itself (a recogniser's character set, a detector's class names): the
    labels piece is there (docs/answers.md)."""
    out: set[str] = set()
    for answer in _list(ctx.data.get("answers")):
        answer = _dict(answer)
        if _dict(answer.get("labels")):
            found = answer.get("from")
            out.update([found] if isinstance(found, str) else [f for f in _list(found) if isinstance(f, str)])
    return out


def _comparison(ctx: Context) -> Iterator[Finding]:
    comparison = _dict(ctx.data.get("comparison"))
    absent = []
    if not _list(comparison.get("cases")):
        absent.append("comparison.cases (at least one)")
    if not _list(comparison.get("rules")):
        absent.append("comparison.rules (at least one)")
    if not _dict(comparison.get("reference")).get("description"):
        absent.append("comparison.reference")
    if absent:
        yield _missing(ctx, "comparison_inputs", ", ".join(absent) + " must be given", "comparison")
