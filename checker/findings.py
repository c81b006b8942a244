"""Findings: the one thing every check produces."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


# Stable ids (the contract in the manifest spec). More may be added; none is renamed.
MANIFEST_PARSE = "manifest.parse"
MANIFEST_SCHEMA = "manifest.schema"
MANIFEST_VERSION = "manifest.version"
MISSING_PIECE = "bundle.missing_piece"
BUNDLE_PATH = "bundle.path"
FILE_MISSING = "bundle.file_missing"
DIGEST = "bundle.digest"
UNLISTED = "bundle.unlisted"
BUNDLE_LIMIT = "bundle.limit"
GRAPH_INVALID = "graph.invalid"
GRAPH_EXTERNAL_DATA = "graph.external_data"
GRAPH_IO = "graph.io"
GRAPH_DYNAMIC_AXES = "graph.dynamic_axes"
GRAPH_PRODUCER = "graph.producer"
LABELS_COUNT = "labels.count"
LABELS_DUPLICATE = "labels.duplicate"
LABELS_INVALID = "labels.invalid"
RUNTIME_OPSET = "runtime.opset"
RUNTIME_VERSION = "runtime.version"
RUNTIME_PROVIDER = "runtime.provider"
RUNTIME_LOAD = "runtime.load"
RUNTIME_INSTALL = "runtime.install"
INPUTS_RANGE = "inputs.range"
INPUTS_FIDELITY = "inputs.fidelity"
INPUTS_NOT_REBUILT = "inputs.not_rebuilt"
COMPARISON_COVERAGE = "comparison.coverage"
COMPARISON_CASE = "comparison.case"
COMPARISON_NAN = "comparison.nan"
COMPARISON_RULE = "comparison.rule"
COMPARISON_NOT_RUN = "comparison.not_run"
COMPARISON_RUNTIME = "comparison.runtime"
VARIANT_NOT_ASSESSED = "variant.not_assessed"
VARIANT_TRANSFORM = "variant.transform"
VARIANT_DIAGNOSIS = "variant.diagnosis"
VALIDATION_FAILED = "validation.failed"
VALIDATION_NOT_RUN = "validation.not_run"
STAGE_SKIPPED = "check.skipped"
REPORT_MERGE = "report.merge"


@dataclass(frozen=True)
class Finding:
    """One observation about a bundle. `file` is relative to the bundle root where possible."""

    id: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "severity": self.severity.value, "message": self.message}
        if self.file is not None:
            out["file"] = self.file
        if self.line is not None:
            out["line"] = self.line
        if self.details:
            out["details"] = self.details
        return out


def error(fid: str, message: str, file: str | None = None, line: int | None = None, **details: Any) -> Finding:
    return Finding(fid, Severity.ERROR, message, file, line, dict(details))


def warning(fid: str, message: str, file: str | None = None, line: int | None = None, **details: Any) -> Finding:
    return Finding(fid, Severity.WARNING, message, file, line, dict(details))


def info(fid: str, message: str, file: str | None = None, line: int | None = None, **details: Any) -> Finding:
    return Finding(fid, Severity.INFO, message, file, line, dict(details))


# The seven pieces of a complete release, as the report's `pieces` names them.
PIECES = (
    "graph",
    "external_weights",
    "preprocessing",
    "labels",
    "comparison_inputs",
    "runtime",
    "validation_command",
)
