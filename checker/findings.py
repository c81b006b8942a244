"""Findings: the one thing every check produces."""

from __future__ import annotations

import enum
from collections.abc import Mapping
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
LABELS_ORDER = "labels.order"
RUNTIME_OPSET = "runtime.opset"
RUNTIME_VERSION = "runtime.version"
RUNTIME_PROVIDER = "runtime.provider"
RUNTIME_LOAD = "runtime.load"
RUNTIME_INSTALL = "runtime.install"
INPUTS_RANGE = "inputs.range"
INPUTS_FIDELITY = "inputs.fidelity"
INPUTS_NOT_REBUILT = "inputs.not_rebuilt"
INPUTS_TOKENIZER_SETTINGS = "inputs.tokenizer_settings"
COMPARISON_COVERAGE = "comparison.coverage"
COMPARISON_CASE = "comparison.case"
COMPARISON_NAN = "comparison.nan"
COMPARISON_RULE = "comparison.rule"
COMPARISON_NOT_RUN = "comparison.not_run"
COMPARISON_RUNTIME = "comparison.runtime"
COMPARISON_TOO_FEW_CASES = "comparison.too_few_cases"
COMPARISON_SENTINEL = "comparison.sentinel"
COMPARISON_ENVELOPE = "comparison.envelope"
VARIANT_NOT_ASSESSED = "variant.not_assessed"
VARIANT_TRANSFORM = "variant.transform"
VARIANT_DIAGNOSIS = "variant.diagnosis"
VARIANT_NO_GAIN = "variant.no_gain"
VALIDATION_FAILED = "validation.failed"
VALIDATION_NOT_RUN = "validation.not_run"
STAGE_SKIPPED = "check.skipped"
REPORT_MERGE = "report.merge"
RULES_LOOSENED = "rules.loosened"
RUNTIME_THREADS = "runtime.threads"
PLATFORM_NOT_RUN = "platform.not_run"
PLATFORM_KERNEL = "platform.kernel"
PLATFORM_FALLBACK = "platform.fallback"
PLATFORM_DIVERGENCE = "platform.divergence"
DEVICE_OUTPUTS = "device.outputs"
DEVICE_EXTRA = "device.extra"
DEVICE_PREPROCESSING = "device.preprocessing"
RUNTIME_OPT_LEVEL = "runtime.optimization_level"
RUNTIME_FALLBACK = "runtime.fallback"
RUNTIME_USABILITY = "runtime.usability"
COMPARISON_NONDETERMINISTIC = "comparison.nondeterministic"
INTERNAL_ERROR = "internal.error"
SIGNATURE_MISSING = "signature.missing"
SIGNATURE_UNTRUSTED = "signature.untrusted"
SIGNATURE_PATH = "signature.path"
SIGNATURE_FILE_ADDED = "signature.file_added"
SIGNATURE_FILE_REMOVED = "signature.file_removed"
SIGNATURE_FILE_CHANGED = "signature.file_changed"
ATTESTATION_UNTRUSTED = "attestation.untrusted"
ATTESTATION_SUBJECT = "attestation.subject"
ATTESTATION_FAILED = "attestation.failed"
ATTESTATION_ACCEPTED = "attestation.accepted"
ATTESTATION_RERUN_DIFFERS = "attestation.rerun_differs"
ATTESTATION_STRICT = "attestation.strict"
ATTESTATION_PLATFORMS = "attestation.platforms"
SIGNATURE_STALE = "signature.stale"
STORE_REUSED = "store.reused"
STORE_REFUSED = "store.refused"
STORE_NOT_REUSED = "store.not_reused"
ANSWERS_INVALID = "answers.invalid"
ANSWERS_FIDELITY = "answers.fidelity"
ANSWERS_NEAR_THRESHOLD = "answers.near_threshold"
ANSWERS_VACUOUS = "answers.vacuous"

# The report schema's bounds on a finding (schemas/report.schema.json): a longer message is cut here, once,
# with a note, so that no check has to count characters and no report breaks its own schema.
MAX_MESSAGE_CHARS = 20_000
MAX_FILE_CHARS = 1024


def printable_text(text: str) -> str:
    """`text` with lone surrogates (undecodable file names, `\\ud800` escapes) written as `\\udXXX`: UTF-8 cannot
    encode them, and every renderer writes UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def bounded(text: str, limit: int) -> str:
    """`text`, printable and cut to at most `limit` characters, the cut said in words."""
    text = printable_text(text)
    if len(text) <= limit:
        return text
    note = f" ... [cut: {len(text) - limit} more characters]"
    keep = limit - len(note) - 8  # the count in the note may grow by a digit or two once the cut is made
    return text[:keep] + f" ... [cut: {len(text) - keep} more characters]"


@dataclass(frozen=True)
class Finding:
    """One observation about a bundle. `file` is relative to the bundle root where possible."""

    id: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", bounded(self.message, MAX_MESSAGE_CHARS))
        if self.file is not None:
            object.__setattr__(self, "file", bounded(self.file, MAX_FILE_CHARS))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "severity": self.severity.value, "message": self.message}
        if self.file is not None:
            out["file"] = self.file
        if self.line is not None:
            out["line"] = self.line
        if self.details:
            out["details"] = self.details
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        """A finding read back from a report (schemas/report.schema.json)."""
        line = data.get("line")
        return cls(
            str(data["id"]),
            Severity(data["severity"]),
            str(data["message"]),
            data.get("file"),
            line if isinstance(line, int) else None,
            dict(data.get("details") or {}),
        )


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
