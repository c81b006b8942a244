"""Text a manifest may hold: every key and string must be Unicode that UTF-8 can write.

YAML's `\\u` escapes (and JSON's) can spell a lone surrogate such as `\\ud800`. No file name, tensor name or
message can carry one: the file system, the renderers and the JSON report would fail on it far from the
manifest. So a manifest holding one is refused where it is loaded, naming the field, and no later stage
ever sees such a string.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

MAX_REPORTED = 20  # a manifest full of them needs no more than this many findings to be fixed


def is_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _bad_strings(node: Any, keys: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """The key paths of every key or string value that UTF-8 cannot encode."""
    if isinstance(node, str):
        if not is_encodable(node):
            yield keys
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and not is_encodable(key):
                yield (*keys, key)
            else:
                yield from _bad_strings(value, (*keys, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _bad_strings(value, (*keys, i))


def unencodable_fields(data: Any, text: str | None = None) -> list[tuple[str | int, ...]]:
    """The key paths of the fields whose key or text is not valid Unicode (at most MAX_REPORTED). Given the
    manifest's `text`, which was decoded from UTF-8 and so holds no surrogate itself, only a `\\u` or `\\U`
    escape can make one: a text without either needs no walk over every string."""
    if text is not None and "\\u" not in text and "\\U" not in text:
        return []
    return list(itertools.islice(_bad_strings(data), MAX_REPORTED))
