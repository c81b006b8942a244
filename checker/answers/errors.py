"""The one error of this room: an answer that cannot be made as declared, or a stored answer that cannot be read."""

from __future__ import annotations


class AnswerError(ValueError):
    """answers.invalid: the message says what and where (the answer's name, the case, the file)."""
