"""Whole sentences: where a text may be cut for a reader who reads it once, and where it may not.

A cut inside a sentence or a parenthesis leaves a fix that says half of what to do (and a `(` with no `)`).
So a long text is cut only after a complete sentence, and what follows goes to a fold; a value too long to
place whole (a report from a file may hold anything) is cut between words outside any parenthesis, with "…".
"""

from __future__ import annotations

_OPEN, _CLOSE = "([{", ")]}"
_ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "cf")


def ends(text: str, marks: str = ".?!") -> list[int]:
    """The index just after each complete sentence's end (". ", "? ", "! ", outside parentheses, quotes and
    code spans, not after a number's point or an abbreviation), and the text's end; with `marks` ";", after each
    complete clause instead."""
    out, depth, code, quote = [], 0, False, False
    for i, c in enumerate(text):
        if c == "`":
            code = not code
        elif code:
            continue
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(depth - 1, 0)
        elif c == '"':
            quote = not quote
        elif c in marks and depth == 0 and not quote and text[i + 1 : i + 2] == " " and not _abbreviated(text, i):
            out.append(i + 1)
    if not out or out[-1] < len(text.rstrip()):
        out.append(len(text.rstrip()))
    return out


def _abbreviated(text: str, i: int) -> bool:
    word = text[:i].rsplit(" ", 1)[-1].lower()
    return word.endswith(_ABBREVIATIONS) or (word[-1:].isdigit() and text[i + 2 : i + 3].isdigit())


def visible(text: str, sentences: int = 2, chars: int = 400) -> tuple[str, str]:
    """The line a reader sees, at most `sentences` complete sentences within `chars` (always the first whole
    sentence), and the rest, for a fold ("" when nothing is left)."""
    text = text.strip()
    cuts = ends(text)
    cut = cuts[0]
    if cut > chars:  # one long sentence: its first complete clauses (up to a ";"), the rest in the fold
        clauses = [end for end in ends(text[:cut], ";") if end <= chars]
        if clauses:
            return text[: clauses[-1]].rstrip(" ;") + " …", text[clauses[-1] :].strip()
        return text[:cut].rstrip(), text[cut:].strip()
    for end in cuts[1:sentences]:
        if end > chars:
            break
        cut = end
    return text[:cut].rstrip(), text[cut:].strip()


def bounded(text: str, limit: int) -> str:
    """`text` whole when it fits; else cut after its last complete sentence that fits, or, when even the first
    does not, between two words outside any parenthesis, with "…"."""
    if len(text) <= limit:
        return text
    fitting = [end for end in ends(text) if end <= limit - 1]
    if fitting:
        return text[: fitting[-1]].rstrip()
    depth, space = 0, 0
    for i, c in enumerate(text[:limit]):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(depth - 1, 0)
        elif c == " " and depth == 0:
            space = i
    return text[: space or max(limit - 1, 0)].rstrip(" ,;:") + "…"
