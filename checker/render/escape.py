"""Make text from a manifest or a report safe to place in GitHub-flavoured Markdown.

A bundle in a pull request is hostile input, and so is a report read back from JSON: a release name
or a message must not break a table, open HTML, inject a link or an image, mention a person or a
team, or reference an issue. The output of `text` is also safe inside an HTML block such as
`<summary>`, because it uses character references rather than backslashes, and both Markdown and
HTML decode those.
"""

from __future__ import annotations

import re
import unicodedata

# Characters that start Markdown or HTML syntax anywhere in a line. `|` splits table cells (GFM
# splits before decoding references, so `&#124;` is safe); `[` `]` make links and images; `<` `>` make
# HTML and autolinks; `` ` `` `*` `~` `_` `$` make code, emphasis, strike-through and math.
_REFERENCE = frozenset("&<>|[]\\`*~$")
# GitHub links mentions, issue references and bare URLs in the rendered text, after references are
# decoded, so those are broken with an invisible character instead.
_ZWSP = "\u200b"
_LINKLIKE = re.compile("([@#\uff20\uff03])|(:)(?=//)|(?<![0-9A-Za-z])([wW]{3})(?=\\.)")
_SPACES = re.compile(r"\s+")


def _clean(value: object, limit: int) -> str:
    """Drop control and format characters (newlines, bidi overrides, zero-width marks) and fold spaces."""
    # Cleaning only shortens a string, so a bounded prefix is enough (a message may be megabytes long).
    raw = str(value)[: limit * 4 + 16]
    chars = (" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in raw)
    kept = "".join(c for c in chars if unicodedata.category(c) != "Cf")
    return _SPACES.sub(" ", kept).strip()


def shorten(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: max(limit - 1, 0)].rstrip() + "…"


def _underscore_is_safe(s: str, i: int) -> bool:
    # GFM never reads an underscore between two letters or digits as emphasis: keep names readable.
    return 0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()


def text(value: object, limit: int = 500) -> str:
    """`value` as inert Markdown text on one line, at most `limit` characters before escaping."""
    s = _LINKLIKE.sub(lambda m: m.group(0) + _ZWSP, shorten(_clean(value, limit), limit))
    out = []
    for i, c in enumerate(s):
        if c in _REFERENCE or (c == "_" and not _underscore_is_safe(s, i)):
            out.append(f"&#{ord(c)};")
        else:
            out.append(c)
    return "".join(out)


_MERMAID_UNSAFE = re.compile(r"[^0-9A-Za-z .,+=/_-]")


def mermaid(value: object, limit: int = 32) -> str:
    """A label for a Mermaid chart: a code block, where references do not apply, so keep a safe alphabet."""
    return shorten(_MERMAID_UNSAFE.sub("_", _clean(value, limit)), limit)
