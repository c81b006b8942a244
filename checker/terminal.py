"""Text bound for a terminal: what a bundle or a report says is shown, never obeyed by the terminal."""

from __future__ import annotations


def printable(text: str) -> str:
    """`text` with control and format characters shown as escapes: a name or message from a bundle must not
    move the cursor, recolour or retitle the terminal, or start a line that reads like a verdict."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}" for c in text)
