"""The one error family the CLI catches: anything else is a bug (exit 3)."""

from __future__ import annotations


class Error(Exception):
    """A problem the user can fix: bad arguments, an unreadable path. Maps to exit status 2."""


class UsageError(Error):
    """The command line itself is wrong."""


class BundleError(Error):
    """A bundle cannot be opened at all (no manifest, unreadable archive)."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (libraries append pages of context), or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
