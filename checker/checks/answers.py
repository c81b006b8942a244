"""The answers stage: each declared answer made from every case's expected outputs (answers.invalid when the outputs
do not fit the declaration), the fragile decisions named (answers.near_threshold), and the answers the application
stored proven against the declared steps (answers.fidelity, with the single edits that explain a difference).
Its Book, in the Context's `answers` slot, is what the comparison judges rules on answers with."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from checker import findings as F
from checker.answers import fidelity
from checker.answers.book import Book, Declared
from checker.answers.errors import AnswerError
from checker.answers.geometry import Placement, placement, raw_size
from checker.answers.items import Decision
from checker.answers.make import sources
from checker.checks.prepared import prepared
from checker.context import Case, Context
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.inputs import Input
from checker.preprocess.errors import CannotReproduce, PreprocessError
from checker.readers.answerfiles import AnswerFileError, read_answer_file
from checker.readers.graphinfo import graph_outputs
from checker.readers.labelfiles import LabelError, from_file, from_metadata
from checker.reports.model import NotRun
from checker.reports.parts.answers import CaseAnswers

MAX_REPORTED_CASES = 1000  # cases whose decoded answers the report shows
MAX_NAMED_CASES = 10


def answers_stage(ctx: Context) -> Iterator[Finding]:
    declared = ctx.spec.answers
    if not declared:
        return
    envs = Envs(ctx)
    book = Book({a.name: Declared(a, i) for i, a in enumerate(declared)}, envs.env)
    ctx.answers = book
    yield from _outputs(ctx, book)
    _libraries(ctx, book)
    yield from _labels(ctx, book, envs)
    invalid: list[Finding] = []
    for case in ctx.loaded_cases:
        invalid.extend(_reference(ctx, book, case))
    yield from _with_edits(ctx, book, invalid)
    yield from _near_threshold(ctx, book)
    yield from _fidelity(ctx, book)
    book.shown = _shown(ctx, book)


def _outputs(ctx: Context, book: Book) -> Iterator[Finding]:
    """Each `from` must be a graph output (the graph's, when it loaded; else the manifest's)."""
    names = (
        [s.name for s in graph_outputs(ctx.graph)]
        if ctx.graph is not None
        else [o.name for o in views.outputs(ctx.spec)]
    )
    for d in book.answers.values():
        missing = [s for s in sources(d.answer) if s not in names]
        if missing:
            book.broken.add(d.name)
            yield F.error(
                F.ANSWERS_INVALID,
                f"answer '{d.name}': the graph has no output '{missing[0]}' (it has {', '.join(names) or 'none'})",
                **ctx.where("answers", d.index, "from"),
                answer=d.name,
            )


def _libraries(ctx: Context, book: Book) -> None:
    """Text answers measure edit distances with rapidfuzz ([answers]): without it they are not judged, and the
    verdict says so."""
    texts = [d.name for d in book.answers.values() if d.answer.kind == "text"]
    if not texts:
        return
    try:
        import rapidfuzz  # noqa: F401
    except ImportError:
        for name in texts:
            book.broken.add(name)
            reason = "rapidfuzz is not installed; install it with: pip install 'onnx-release-checker[answers]'"
            ctx.not_run.append(NotRun(f"answer '{name}'", reason))


def _labels(ctx: Context, book: Book, envs: Envs) -> Iterator[Finding]:
    for d in book.answers.values():
        labels = getattr(d.answer, "labels", None)
        if labels is None:
            continue
        try:
            if labels.path is not None:
                path = ctx.path(labels.path)
                envs.labels[d.name] = None if path is None else from_file(path, labels.path)
            elif ctx.graph is not None:
                envs.labels[d.name] = from_metadata(ctx.graph, str(labels.metadata_key))
        except LabelError as exc:
            book.broken.add(d.name)
            yield F.error(
                F.ANSWERS_INVALID,
                f"answer '{d.name}': labels: {exc}",
                **ctx.where("answers", d.index, "labels"),
                answer=d.name,
            )


def _with_edits(ctx: Context, book: Book, invalid: list[Finding]) -> Iterator[Finding]:
    """An answer that cannot be made, whose cases store the application's answers: the single edits of the
    declaration that make them are named (a class_offset off by one leaves one label too many)."""
    for finding in invalid:
        name = finding.details.get("answer")
        declared = book.answers.get(name) if isinstance(name, str) else None
        stored = _stored(ctx, book, declared) if declared is not None else []
        edits = fidelity.explain(declared.answer, stored) if declared is not None and stored else []
        if not edits:
            yield finding
            continue
        said = "; or ".join(edits[: fidelity.MAX_NAMED])
        message = f"{finding.message}; the answers the application stored are made by a single edit: {said}"
        yield F.error(
            finding.id, message, finding.file, finding.line, **finding.details, edits=edits[: fidelity.MAX_NAMED]
        )


def _stored(ctx: Context, book: Book, declared: Declared) -> list[fidelity.Stored]:
    """The cases' stored answers of one answer that read (the fidelity stage reports those that do not)."""
    out = []
    for case in ctx.loaded_cases:
        rel = case.answers.get(declared.name)
        path = ctx.path(rel) if rel is not None else None
        if rel is None or path is None:
            continue
        try:
            items = declared.kind.parse(read_answer_file(path, rel), rel)
        except (AnswerFileError, AnswerError):
            continue
        out.append(fidelity.Stored(case.name, case.expected, book.env_for(case, declared), items))
    return out


def _reference(ctx: Context, book: Book, case: Case) -> Iterator[Finding]:
    """The case's reference answers: the declared steps on its expected outputs (once; the comparison reuses
    them)."""
    made = book.reference.setdefault(case.name, {})
    for d in book.answers.values():
        if d.name in book.broken or not all(s in case.expected for s in sources(d.answer)):
            continue
        try:
            made[d.name] = book.decode(d.name, case, case.expected)
        except CannotReproduce as exc:
            book.broken.add(d.name)
            ctx.not_run.append(NotRun(f"answer '{d.name}'", str(exc)))
        except AnswerError as exc:
            book.broken.add(d.name)  # one finding per answer, at the block's line, before any rule runs
            yield F.error(
                F.ANSWERS_INVALID,
                f"answer '{d.name}' cannot be made from case '{case.name}''s expected outputs: {exc}",
                **ctx.where("answers", d.index),
                answer=d.name,
                case=case.name,
            )


def _near_threshold(ctx: Context, book: Book) -> Iterator[Finding]:
    for d in book.answers.values():
        if d.answer.kind != "decision" or d.name in book.broken:
            continue
        margin = d.answer.decode.margin
        near = [
            (case, item)
            for case, made in book.reference.items()
            for item in made.get(d.name, [])
            if isinstance(item, Decision) and item.distance <= margin
        ]
        if not near:
            continue
        shown = ", ".join(f"'{c}' ({i.score:.4g})" for c, i in near[:MAX_NAMED_CASES])
        more = f" and {len(near) - MAX_NAMED_CASES} more" if len(near) > MAX_NAMED_CASES else ""
        yield F.info(
            F.ANSWERS_NEAR_THRESHOLD,
            f"answer '{d.name}': {len(near)} reference item(s) lie within {margin:g} of the threshold "
            f"{d.answer.decode.threshold:g}, where a small change flips the decision: {shown}{more}",
            **ctx.where("answers", d.index, "decode", "threshold"),
            answer=d.name,
            cases=list(dict.fromkeys(c for c, _ in near)),
        )


def _fidelity(ctx: Context, book: Book) -> Iterator[Finding]:
    stored: dict[str, list[fidelity.Stored]] = {}
    for case in ctx.loaded_cases:
        for name, rel in case.answers.items():
            declared = book.answers.get(name)
            keys = (*case.where, "expected_answers", name)
            if declared is None:
                known = ", ".join(book.answers) or "none"
                yield F.error(
                    F.ANSWERS_INVALID,
                    f"case '{case.name}': no answer is named '{name}' (answers: {known})",
                    **ctx.where(*keys),
                )
                continue
            if name in book.broken or name not in book.reference.get(case.name, {}):
                continue
            path = ctx.path(rel)
            if path is None:
                continue  # the files stage said it is missing or refused
            try:
                value = read_answer_file(path, rel)
                items = declared.kind.parse(value, rel)
            except (AnswerFileError, AnswerError) as exc:
                yield F.error(
                    F.ANSWERS_INVALID, f"case '{case.name}': {exc}", **ctx.where(*keys), answer=name, path=rel
                )
                continue
            stored.setdefault(name, []).append(
                fidelity.Stored(case.name, case.expected, book.env_for(case, declared), items)
            )
    for name, cases in stored.items():
        yield from _judged_fidelity(ctx, book.answers[name], cases)


def _judged_fidelity(ctx: Context, declared: Declared, stored: list[fidelity.Stored]) -> Iterator[Finding]:
    try:
        gaps = fidelity.gaps(declared.answer, stored)
    except AnswerError as exc:
        yield F.error(F.ANSWERS_INVALID, str(exc), **ctx.where("answers", declared.index), answer=declared.name)
        return
    if not gaps:
        return
    failing = [s for s in stored if s.case in {g.case for g in gaps}]
    edits = fidelity.explain(declared.answer, failing)
    shown = "; ".join(f"case '{g.case}': {g.difference}" for g in gaps[:3])
    more = f"; and {len(gaps) - 3} more case(s)" if len(gaps) > 3 else ""
    if edits:
        why = "explained by a single edit of the declaration: " + "; or ".join(edits[: fidelity.MAX_NAMED])
    else:
        why = "no single edit of the declaration explains it"
    yield F.error(
        F.ANSWERS_FIDELITY,
        f"answer '{declared.name}': the declared steps do not make the answer the application stored in "
        f"{len(gaps)} of {len(stored)} case(s) ({shown}{more}); {why}",
        **ctx.where("answers", declared.index),
        answer=declared.name,
        cases=[g.case for g in gaps],
        edits=edits[: fidelity.MAX_NAMED],
    )


def _shown(ctx: Context, book: Book) -> list[CaseAnswers]:
    out = []
    for case in ctx.loaded_cases[:MAX_REPORTED_CASES]:
        made = book.reference.get(case.name, {})
        if made:
            out.append(CaseAnswers(case.name, {n: book.answers[n].kind.shown(items) for n, items in made.items()}))
    return out


@dataclass
class Envs:
    """What a case's decoders need from the bundle: labels, the raw image's placement, input sizes, tokenizers."""

    ctx: Context
    labels: dict[str, list[str] | None] = field(default_factory=dict)  # answer -> its own labels, when it has them
    places: dict[tuple[str, str], Placement] = field(default_factory=dict)
    tokenizers: dict[str, Any] = field(default_factory=dict)

    def env(self, case: Case, declared: Declared) -> CaseEnv:
        return CaseEnv(self, case, declared)

    def image_inputs(self) -> list[str]:
        return [i.name for i in self._inputs() if _kind(i) == "image" or i.meaning == "image"]

    def _inputs(self) -> list[Input]:
        return views.inputs(self.ctx.spec)


def _kind(entry: Input) -> str | None:
    return entry.preprocessing.kind if entry.preprocessing is not None else None


@dataclass
class CaseEnv:
    envs: Envs
    case: Case
    declared: Declared

    @property
    def inputs(self) -> Mapping[str, np.ndarray]:
        return self.case.inputs

    def labels(self) -> list[str] | None:
        own = self.envs.labels.get(self.declared.name)
        if own is not None:
            return own
        return self.envs.ctx.labels.get(sources(self.declared.answer)[0])

    def placement(self, image_input: str) -> Placement:
        key = (self.case.name, image_input)
        if key not in self.envs.places:
            self.envs.places[key] = self._placement(image_input)
        return self.envs.places[key]

    def _placement(self, name: str) -> Placement:
        ctx = self.envs.ctx
        rel = self.case.raw.get(name)
        if rel is None:
            raise AnswerError(f"to_raw: {name} needs the case's raw file for input '{name}' (`raw: {{{name}: ...}}`)")
        path = ctx.path(rel)
        if path is None:
            raise AnswerError(f"to_raw: the raw file '{rel}' is missing or refused")
        inputs = prepared(ctx)
        if inputs.kind(name) != "image":
            raise AnswerError(f"to_raw: input '{name}' has no image preprocessing to follow back")
        try:
            from checker.preprocess.image.shorthand import spec_steps

            steps = spec_steps(inputs.spec(name))
        except PreprocessError as exc:
            raise AnswerError(f"to_raw: the preprocessing of '{name}' cannot be read: {exc}") from exc
        height, width = raw_size(Path(path), rel, steps)
        return placement(steps, height, width)

    def input_size(self, image_input: str | None) -> tuple[int, int]:
        names = [image_input] if image_input is not None else self.envs.image_inputs()
        for name in names:
            x = self.case.inputs.get(name)
            entry = next((e for e in self.envs._inputs() if e.name == name), None)
            if x is None or x.ndim < 2:
                continue
            layout = (entry.layout if entry is not None else None) or ("NCHW" if x.ndim == 4 else "HW")
            if len(layout) == x.ndim and "H" in layout and "W" in layout:
                return int(x.shape[layout.index("H")]), int(x.shape[layout.index("W")])
            return int(x.shape[-2]), int(x.shape[-1])
        raise AnswerError("normalized coordinates need an image input whose height and width the case's tensor gives")

    def tokenizer(self, text_input: str) -> Any:
        if text_input not in self.envs.tokenizers:
            inputs = prepared(self.envs.ctx)
            if inputs.kind(text_input) != "text":
                raise AnswerError(f"tokens: input '{text_input}' has no text preprocessing with a tokenizer.json")
            from checker.preprocess.text.tokenize import load_tokenizer

            try:
                self.envs.tokenizers[text_input] = load_tokenizer(inputs.spec(text_input), self.envs.ctx.root).tokenizer
            except PreprocessError as exc:
                raise AnswerError(f"tokens: {exc}") from exc
        return self.envs.tokenizers[text_input]

    def image_inputs(self) -> list[str]:
        return self.envs.image_inputs()
