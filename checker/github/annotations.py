"""`::error` and `::warning` workflow commands for findings, on the manifest line at fault.

GitHub shows at most 10 error and 10 warning annotations per step and drops the rest silently, so
this picks the most useful: one finding of each id first (one with a file and line where there is
one), then the rest, those with a file and line first, in the report's order otherwise. The caller
says how many it picked out of how many.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from checker.findings import Severity

if TYPE_CHECKING:
    from checker.reports.model import Report  # `checker --help` imports this module, the report only when used

PER_STEP = 10
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning"}
ARCHIVES = (".zip", ".tar.gz", ".tgz", ".tar")
MANIFESTS = ("bundle.yaml", "bundle.yml", "bundle.json")
MAX_MESSAGE = 4000


@dataclass(frozen=True)
class Annotation:
    level: str  # error | warning | notice
    message: str
    file: str | None = None
    line: int | None = None
    title: str | None = None
    key: str = ""  # the finding id: one of each id is shown before a second of any

    def command(self) -> str:
        props = [(k, v) for k, v in (("file", self.file), ("line", self.line), ("title", self.title)) if v]
        joined = ",".join(f"{k}={escape_property(str(v))}" for k, v in props)
        return f"::{self.level}{' ' + joined if joined else ''}::{escape_data(self.message[:MAX_MESSAGE])}"


@dataclass
class Selection:
    chosen: list[Annotation] = field(default_factory=list)
    total: dict[str, int] = field(default_factory=dict)  # level -> how many findings had it

    def left_out(self, level: str) -> int:
        return self.total.get(level, 0) - sum(1 for a in self.chosen if a.level == level)

    def note(self) -> str | None:
        """A line for the job summary when GitHub's limit hid some findings."""
        hidden = {level: self.left_out(level) for level in LEVELS.values()}
        if not any(hidden.values()):
            return None
        parts = [f"{n} of {self.total[level]} {level}s" for level, n in hidden.items() if n]
        return (
            f"_GitHub shows {PER_STEP} annotations of each kind per step: {' and '.join(parts)} "
            "are not annotated, and are listed above._"
        )


def inert(text: str) -> str:
    """`text` for the log, where the runner can read none of it as a workflow command.

    The runner takes a line (split at CR or LF) as a command when, leading space trimmed, it starts with
    `::`, and finds the old `##[name]` form anywhere in a line: such a line is prefixed, and `##[` broken.
    Used for what reaches the log outside a `::stop-commands::` fence (a crash's traceback, say).
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(_inert_line(line) for line in lines)


def _inert_line(line: str) -> str:
    line = line.replace("##[", "#\u200b#[")
    return "| " + line if line.lstrip().startswith("::") else line


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def select(report: Report, workspace: Path | None, reserve: Mapping[str, int] | None = None) -> Selection:
    """The annotations to emit: at most PER_STEP per level, less what `reserve` keeps for the caller."""
    selection = Selection()
    for severity, level in LEVELS.items():
        candidates = list(_candidates(report, severity, workspace))
        selection.total[level] = len(candidates)
        room = max(PER_STEP - (reserve or {}).get(level, 0), 0)
        selection.chosen.extend(a for _, a in sorted(_ranked(candidates))[:room])
    return selection


def _ranked(annotations: list[Annotation]) -> Iterator[tuple[tuple[int, int, int], Annotation]]:
    """Sort keys: one of each finding id first (its best-placed one), then by place, then in report order."""
    places = sorted((0 if a.file and a.line else 1 if a.file else 2, i) for i, a in enumerate(annotations))
    seen: set[str] = set()
    for place, index in places:
        a = annotations[index]
        repeat = 1 if a.key in seen else 0
        seen.add(a.key)
        yield (repeat, place, index), a


def _candidates(report: Report, severity: Severity, workspace: Path | None) -> Iterator[Annotation]:
    for bundle in report.bundles:
        root = bundle_root(bundle.path, workspace)
        name = bundle.name or bundle.path or "bundle"
        for f in bundle.findings:
            if f.severity is not severity:
                continue
            file = _inside(root, f.file) if root is not None else None
            line = f.line if file and f.line is not None and f.line > 0 else None
            yield Annotation(LEVELS[severity], f.message, file, line, f"{f.id} ({name})", f.id)


def bundle_root(raw: str, workspace: Path | None) -> PurePosixPath | None:
    """The folder of the bundle at `raw` (its path in the report) relative to the workspace, or None when
    annotations cannot point into it."""
    if not raw or raw.lower().endswith(ARCHIVES):
        return None
    path = Path(raw)
    if path.name in MANIFESTS or path.suffix.lower() in (".yaml", ".yml", ".json"):
        path = path.parent
    if path.is_absolute():
        if workspace is None:
            return None
        try:
            path = path.relative_to(workspace)
        except ValueError:
            return None
    return PurePosixPath(path.as_posix())


def _inside(root: PurePosixPath, file: object) -> str | None:
    """`file` (relative to the bundle) relative to the workspace; None if it would leave the bundle."""
    if not isinstance(file, str) or not file or file.startswith("/") or "\\" in file:
        return None
    rel = PurePosixPath(file)
    if ".." in rel.parts:
        return None
    joined = root / rel
    return joined.as_posix().removeprefix("./")
