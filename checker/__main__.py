from __future__ import annotations

from checker.cli import run

run()
