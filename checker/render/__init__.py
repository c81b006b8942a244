"""Renderers: each turns the JSON-shaped report into text. They never run a check."""

from __future__ import annotations

import importlib
from typing import Any

FORMATS = {
    "text": "checker.render.text",
    "json": "checker.render.json",
    "markdown": "checker.render.markdown",
    "junit": "checker.render.junit",
}


def render(fmt: str, report: dict[str, Any], **options: Any) -> str:
    module = importlib.import_module(FORMATS[fmt])
    text: str = module.render(report, **options)
    return text
