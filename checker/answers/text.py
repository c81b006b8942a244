"""`kind: text`: a string per item, by greedy CTC over the labels (PaddleOCR's CTCLabelDecode) or by a text input's
tokenizer.json over argmax token ids; judged by the character error rate (rapidfuzz's Levenshtein distance over
the reference's length) and the share of items with equal strings."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from checker.answers.errors import AnswerError
from checker.answers.items import Item
from checker.answers.kind import MAX_CHANGES, MAX_SHOWN_CHARACTERS, CaseMeasure, Edit, Env, no_overall, per_item, short
from checker.manifest.model.answers import Ctc, TextAnswer, TextRule
from checker.reports.parts.values import JsonValue

MAX_ITEMS = 100_000
MAX_STORED_CHARACTERS = 1_000_000  # the characters of one stored answer, every item together


def ctc_greedy(logits: np.ndarray, labels: list[str], blank: int, merge_repeats: bool) -> str:
    """The best class at each step; repeats merged, then blanks dropped (CTCLabelDecode's greedy path)."""
    if logits.shape[0] == 0:
        return ""
    best = np.asarray(logits).argmax(axis=-1)
    keep = np.ones(best.shape, bool)
    if merge_repeats:
        keep[1:] = best[1:] != best[:-1]
    keep &= best != blank
    return "".join(labels[int(i)] for i in best[keep])


def decode(answer: TextAnswer, tensors: Sequence[np.ndarray], env: Env, tweak: Any = None) -> list[Item]:
    d = answer.decode
    if d.ctc is not None:
        labels = env.labels()
        if labels is None:
            raise AnswerError(f"answer '{answer.name}': ctc decoding needs labels (the character set, blank included)")
        out: list[Item] = []
        for logits in per_item(tensors[0], 2, "ctc decoding ([time, classes] per item)"):
            if logits.shape[-1] != len(labels):
                raise AnswerError(
                    f"answer '{answer.name}': {logits.shape[-1]} classes per step but {len(labels)} labels (the "
                    "character set with its blank)"
                )
            if not 0 <= d.ctc.blank < len(labels):
                raise AnswerError(f"answer '{answer.name}': blank {d.ctc.blank} is not a class of {len(labels)}")
            out.append(ctc_greedy(logits, labels, d.ctc.blank, d.ctc.merge_repeats))
        return out
    assert d.tokens is not None  # the schema requires ctc or tokens
    tokenizer = env.tokenizer(d.tokens.tokenizer)
    x = tensors[0]
    ids = (
        per_item(x, 1, "token ids")
        if x.dtype.kind in "iu"
        else [r.argmax(axis=-1) for r in per_item(x, 2, "token logits")]
    )
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)
    texts: list[Item] = []
    for row in ids:
        row = [int(i) for i in np.asarray(row).reshape(-1)]
        if any(not 0 <= i < vocab for i in row):
            raise AnswerError(f"answer '{answer.name}': a token id is outside the tokenizer's {vocab} tokens")
        texts.append(str(tokenizer.decode(row, skip_special_tokens=d.tokens.skip_special)))
    return texts


def distance(a: str, b: str) -> int:
    from rapidfuzz.distance import Levenshtein  # an optional extra ([answers]): only text answers need it

    return int(Levenshtein.distance(a, b))


def measure(rule: TextRule, answer: TextAnswer, mine: list[Item], other: list[Item]) -> CaseMeasure:
    edits = length = exact = 0
    changes: list[str] = []
    for m, o in zip(mine, other):
        assert isinstance(m, str) and isinstance(o, str)
        if m == o:
            exact += 1
            length += len(o)
            continue
        edits += distance(m, o)
        length += len(o)
        if len(changes) < MAX_CHANGES:
            changes.append(f"text '{short(o)}' → '{short(m)}'")
    cer = edits / length if length else (0.0 if edits == 0 else 1.0)
    share = exact / len(mine) if mine else 1.0
    failed = []
    if cer > rule.max_cer + 1e-12:
        failed.append(f"character error rate {cer:.4g} (max {rule.max_cer:g})")
    if rule.min_exact is not None and share < rule.min_exact - 1e-12:
        failed.append(f"{exact} of {len(mine)} string(s) equal (min share {rule.min_exact:g})")
    return CaseMeasure(
        figure=cer,
        passed=not failed,
        figures={"cer": cer, "exact": share},
        note="; ".join(failed) or None,
        changes=changes,
        empty=all(not o for o in other),
        items=len(mine),
    )


def parse(value: Any, source: str) -> list[Item]:
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_ITEMS or not all(isinstance(v, str) for v in items):
        raise AnswerError(f"{source}: a text answer is a JSON string or an array of at most {MAX_ITEMS} strings")
    if sum(len(v) for v in items) > MAX_STORED_CHARACTERS:
        raise AnswerError(f"{source}: more than {MAX_STORED_CHARACTERS} characters")
    return list(items)


def gap(decoded: list[Item], stored: list[Item]) -> str | None:
    if len(decoded) != len(stored):
        return f"the declared steps give {len(decoded)} string(s), the stored answer {len(stored)}"
    for k, (d, s) in enumerate(zip(decoded, stored)):
        if d != s:
            where = f"item {k}: " if len(decoded) > 1 else ""
            return f"{where}the declared steps read '{short(str(d))}', the application showed '{short(str(s))}'"
    return None


def shown(items: list[Item]) -> list[JsonValue]:
    out: list[JsonValue] = []
    for item in items:
        text = str(item)
        out.append(
            text
            if len(text) <= MAX_SHOWN_CHARACTERS
            else {"text": text[:MAX_SHOWN_CHARACTERS], "more": len(text) - MAX_SHOWN_CHARACTERS}
        )
    return out


def edits(answer: TextAnswer, env: Env) -> Iterator[Edit]:
    d = answer.decode
    if d.ctc is not None:
        labels = env.labels() or []
        for blank in dict.fromkeys((0, len(labels) - 1, d.ctc.blank + 1, d.ctc.blank - 1)):
            if blank != d.ctc.blank and 0 <= blank < len(labels):
                yield Edit(_ctc(answer, blank=blank), f"ctc blank {blank} for {d.ctc.blank}")
        yield Edit(
            _ctc(answer, merge_repeats=not d.ctc.merge_repeats),
            f"ctc merge_repeats {str(not d.ctc.merge_repeats).lower()}",
        )
    if d.tokens is not None:
        skip = not d.tokens.skip_special
        words = "special tokens skipped" if skip else "special tokens not skipped (skip_special: false)"
        tokens = dataclasses.replace(d.tokens, skip_special=skip)
        yield Edit(dataclasses.replace(answer, decode=dataclasses.replace(d, tokens=tokens)), words)


def _ctc(answer: TextAnswer, **changes: Any) -> TextAnswer:
    assert answer.decode.ctc is not None
    ctc: Ctc = dataclasses.replace(answer.decode.ctc, **changes)
    return dataclasses.replace(answer, decode=dataclasses.replace(answer.decode, ctc=ctc))


class TextKind:
    name = "text"
    rule = TextRule
    direction = "max"
    keeps_items = False
    wording = "has a character error rate of {v:.4g} (max {t:g})"
    decode = staticmethod(decode)
    overall = staticmethod(no_overall)
    parse = staticmethod(parse)
    measure = staticmethod(measure)
    gap = staticmethod(gap)
    shown = staticmethod(shown)
    edits = staticmethod(edits)

    @staticmethod
    def threshold(rule: TextRule) -> float:
        return rule.max_cer


KIND = TextKind()
