"""Where a loosening is written: the line of the head's manifest its sentence is about, for every renderer to
name or link (the rule's line, or the line a weakened setting's sentence names)."""

from __future__ import annotations

import re

from checker.reports.parts.changes import PASSES_ONLY, BundleChange

HEAD_LINE = re.compile(r"\(loosened, line (\d+)\)")


def loosening_line(item: str, entry: BundleChange) -> int | None:
    """The head manifest's line of a loosening: the one its setting's sentence names, or its rule's (a removed
    rule or setting is at the base's line, which the head's file does not hold)."""
    found = HEAD_LINE.search(item)
    if found is not None:
        return int(found.group(1))
    rules = entry.compared.rules if entry.compared is not None else []
    for rule in rules:
        named = item.startswith(rule.name + " ") or item.startswith(f"{PASSES_ONLY} {rule.name} ")
        if named and rule.rule != "removed" and rule.line is not None:
            return rule.line
    return None


def with_line(item: str, entry: BundleChange, manifest: str | None) -> str:
    """The sentence, with its rule's line named when the sentence does not name one."""
    line = loosening_line(item, entry)
    if line is None or HEAD_LINE.search(item):
        return item
    return f"{item} ({manifest or 'manifest'} line {line})"
