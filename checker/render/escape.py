"""Make text from a manifest or a report safe to place in GitHub-flavoured Markdown.

A bundle in a pull request is hostile input, and so is a report read back from JSON: a release name
or a message must not break a table, open HTML, inject a link or an image, mention a person or a
team, or reference an issue. The output of `text` is also safe inside an HTML block such as
`<summary>`, because it uses character references rather than backslashes, and both Markdown and
HTML decode those.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Characters that start Markdown or HTML syntax anywhere in a line. `|` splits table cells (GFM
# splits before decoding references, so `&#124;` is safe); `[` `]` make links and images; `<` `>` make
# HTML and autolinks; `` ` `` `*` `~` `$` make code, emphasis, strike-through and math. An underscore
# between two letters or digits never makes emphasis in GFM, so names like mobilenet_v2 stay readable.
_SYNTAX = re.compile(r"[&<>|\[\]\\`*~$]|_(?![^\W_])|(?<![^\W_])_")
# GitHub links mentions, issue references and bare URLs in the rendered text, after references are
# decoded, so those are broken with an invisible character instead.
_ZWSP = "\u200b"
_LINKLIKE = re.compile("([@#\uff20\uff03])|(:)(?=//)|(?<![0-9A-Za-z])([wW]{3})(?=\\.)")
_SPACES = re.compile(r"\s+")


def _clean(value: object, limit: int) -> str:
    """Drop control and format characters (newlines, bidi overrides, zero-width marks) and fold spaces."""
    raw = str(value)[: limit * 4 + 16]
    if raw.isascii() and raw.isprintable():  # the usual case, without a look-up per character
        return _SPACES.sub(" ", raw).strip()
    chars = (" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in raw)
    kept = "".join(c for c in chars if unicodedata.category(c) != "Cf")
    return _SPACES.sub(" ", kept).strip()


def shorten(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: max(limit - 1, 0)].rstrip() + "…"


def text(value: object, limit: int = 500) -> str:
    """`value` as inert Markdown text on one line, at most `limit` characters before escaping."""
    raw = value if isinstance(value, str) else str(value)
    # Cleaning only shortens a string, so a bounded prefix is enough (a message may be megabytes long).
    return _text(raw[: limit * 4 + 16], limit)


def forget() -> None:
    """Drop the memo of escaped strings (a renderer calls it when done with a report)."""
    _text.cache_clear()


@functools.lru_cache(maxsize=1 << 16)  # a report is rendered again at each level of detail
def _text(value: str, limit: int) -> str:
    s = _LINKLIKE.sub(lambda m: m.group(0) + _ZWSP, shorten(_clean(value, limit), limit))
    return _SYNTAX.sub(lambda m: f"&#{ord(m.group(0))};", s)


_MERMAID_UNSAFE = re.compile(r"[^0-9A-Za-z .,+=/_-]")


def mermaid(value: object, limit: int = 32) -> str:
    """A label for a Mermaid chart: a code block, where references do not apply, so keep a safe alphabet."""
    return shorten(_MERMAID_UNSAFE.sub("_", _clean(value, limit)), limit)
