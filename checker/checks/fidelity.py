"""inputs.fidelity: each raw input, preprocessed as declared, reproduces the case's stored tensor.

When it does not, the finding gives the largest difference, where it is, the tolerance, and the edit of the
declared preprocessing that explains it when one does (two steps swapped, a rounding, a missing template, ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from checker import findings as F
from checker.checks.prepared import names_unusable_file, prepared
from checker.context import Case, Context
from checker.findings import Finding
from checker.preprocess.difference import Difference, difference
from checker.preprocess.errors import CannotReproduce, MissingExtra, MissingLibrary, PreprocessError
from checker.preprocess.kind import Kind, Source
from checker.preprocess.rebuild import REBUILT_KINDS, Inputs, open_source
from checker.preprocess.search import Search
from checker.preprocess.text.spec import TextSpec
from checker.reports.model import NotRun


def fidelity_stage(ctx: Context) -> Iterator[Finding]:
    if ctx.cases is None:
        return
    run = _Run(ctx, prepared(ctx))
    for case in ctx.rebuilt_cases():
        for name, rel in case.raw.items():
            yield from run.case_input(case, name, rel)


@dataclass
class _Run:
    """One pass over the cases; problems that are not about one case are reported once."""

    ctx: Context
    inputs: Inputs
    reported: set[str] = field(default_factory=set)

    def once(self, key: str, finding: Finding) -> Iterator[Finding]:
        if key not in self.reported:
            self.reported.add(key)
            yield finding

    def case_input(self, case: Case, name: str, rel: str) -> Iterator[Finding]:
        if self.inputs.entry(name) is None:
            msg = f"case '{case.name}': raw names '{name}', which is not one of the manifest's inputs"
            yield F.error(F.INPUTS_FIDELITY, msg, **self.ctx.where(*case.where, "raw", name))
            return
        path = self.ctx.path(rel) if isinstance(rel, str) else None
        kind = self.inputs.kind(name)
        if kind not in REBUILT_KINDS or path is None or not path.is_file():
            return  # custom raw files are kept for a reader; a missing file is reported already
        try:
            if not self._usable_spec(name):
                return
            if not self.inputs.rebuilds(name):
                return  # audio without `steps` keeps its old meaning: the raw file is kept for a reader
            source = open_source(self.inputs, name, path, rel)
            rebuilt = source.build() if source is not None else {}
        except PreprocessError as e:
            yield from self._refused(case, name, e)
            return
        if source is None:
            return
        raw = _Raw(case, name, rel, source, self.inputs.kind_of(self.inputs.source_name(name)))
        differing: dict[str, tuple[Difference, np.ndarray]] = {}
        for target, tensor in rebuilt.items():
            stored = case.inputs.get(target)
            # A stored tensor of another dtype kind (strings) is the cases check's to report.
            if stored is not None and stored.dtype.kind in "biuf":
                diff = difference(
                    tensor, stored, source.tolerance, first=raw.kind.tokens, relative=raw.kind.relative_tolerance
                )
                if diff is not None:
                    differing[target] = (diff, stored)
        yield from _grouped(self.ctx, raw, self.inputs.source_name(name), differing)

    def _usable_spec(self, name: str) -> bool:
        """Parse the spec (raising its error); False when a file it names was refused, is missing, or fails
        its digest: the files stage has said so already."""
        source = self.inputs.source_name(name)
        if names_unusable_file(self.ctx, self.inputs.preprocessing(source)):
            return False
        spec = self.inputs.spec(source)
        if not isinstance(spec, TextSpec):
            return True
        actual = self.ctx.digests.get(spec.tokenizer)
        return not (spec.tokenizer_sha256 and actual and actual != spec.tokenizer_sha256)

    def _refused(self, case: Case, name: str, e: PreprocessError) -> Iterator[Finding]:
        source = _safe_source_name(self.inputs, name)
        spec_where = self.ctx.where("inputs", self.inputs.index(source), "preprocessing")
        if isinstance(e, MissingExtra):
            if e.extra not in self.reported:
                self.ctx.not_run.append(NotRun(f"{e.extra} fidelity", f"needs {e.package} ([{e.extra}])"))
            yield from self.once(e.extra, F.warning(F.INPUTS_NOT_REBUILT, str(e), extra=e.extra))
        elif isinstance(e, CannotReproduce):
            msg = f"input '{source}' is not rebuilt from raw files: {e}"
            details: dict[str, Any] = {"input": source}
            if isinstance(e, MissingLibrary):
                details["extra"] = e.extra  # the extra that installs the library a step names
            if f"input:{source}" not in self.reported:
                self.ctx.not_run.append(NotRun(f"fidelity of input '{source}'", f"cannot be reproduced here: {e}"))
            finding = F.warning(F.INPUTS_NOT_REBUILT, msg, **spec_where, **details)
            yield from self.once(f"input:{source}", finding)
        elif self._spec_failed(source):
            msg = f"input '{source}': the declared preprocessing cannot be applied: {e}"
            yield from self.once(f"input:{source}", F.error(F.INPUTS_FIDELITY, msg, **spec_where, input=source))
        else:
            msg = f"case '{case.name}', input '{name}': the raw input cannot be preprocessed as declared: {e}"
            where = self.ctx.where(*case.where, "raw", name)
            yield F.error(F.INPUTS_FIDELITY, msg, **where, case=case.name, input=name)

    def _spec_failed(self, source: str) -> bool:
        try:
            self.inputs.spec(source)
        except PreprocessError:
            return True
        return False


def _safe_source_name(inputs: Inputs, name: str) -> str:
    try:
        return inputs.source_name(name)
    except PreprocessError:
        return name


@dataclass(frozen=True)
class _Raw:
    """One raw file of one case, as read for the input it names."""

    case: Case
    name: str  # the input the case's `raw` names
    rel: str
    source: Source
    kind: Kind


def _grouped(
    ctx: Context, raw: _Raw, lead: str, differing: dict[str, tuple[Difference, np.ndarray]]
) -> Iterator[Finding]:
    """One finding per differing input; but when the text input differs, the inputs derived from its tokens
    (attention_mask, token_type_ids) differ for the same reason, so its one finding names them instead of each
    repeating it."""
    if lead in differing and len(differing) > 1:
        derived = [t for t in differing if t != lead]
        diff, stored = differing[lead]
        yield _finding(ctx, raw, lead, diff, stored, derived)
        return
    for target, (diff, stored) in differing.items():
        yield _finding(ctx, raw, target, diff, stored, [])


def _finding(ctx: Context, raw: _Raw, target: str, diff: Difference, stored: np.ndarray, derived: list[str]) -> Finding:
    tolerance = raw.source.tolerance
    search = raw.kind.explain(raw.source, target, stored, tolerance)
    message = _message(raw, target, diff, tolerance, search)
    details = _details(raw, target, diff, tolerance, search.found)
    if search.fits:  # the one edit, in its own words: the fix names it once, the message keeps the ranking
        details["edit"] = search.fits[0].description
    details["fits"] = [
        {"edit": f.description, "mean_difference": f.mean, "largest_difference": f.largest, "exact": f.exact}
        for f in search.fits
    ]
    if derived:
        names = ", ".join(f"'{d}'" for d in derived)
        message += f"; the input(s) derived from its tokens, {names}, differ from their stored tensors with it"
        details["derived"] = derived
    return F.error(F.INPUTS_FIDELITY, message, **ctx.where(*raw.case.where, "raw", raw.name), **details)


def _message(raw: _Raw, target: str, diff: Difference, tolerance: float, search: Search) -> str:
    is_text = raw.kind.tokens
    verb, unit = ("tokenized", "tokenization") if is_text else ("preprocessed", "preprocessing")
    head = f"case '{raw.case.name}', input '{target}': {raw.rel} {verb} as declared"
    if not diff.same_shape:
        body = f"{head} has shape {list(diff.rebuilt_shape)}, the stored tensor {list(diff.stored_shape)}"
    elif is_text:
        body = (
            f"{head} differs from the stored tensor in {diff.count} of {diff.size} tokens, the first at "
            f"{list(diff.index or ())} (rebuilt {diff.rebuilt_value:g}, stored {diff.stored_value:g})"
        )
    else:
        body = (
            f"{head} differs from the stored tensor by up to {diff.largest:.4g} at {list(diff.index or ())} "
            f"(rebuilt {diff.rebuilt_value:.4g}, stored {diff.stored_value:.4g}; {diff.count} of {diff.size} "
            f"values beyond the tolerance {tolerance:.4g})"
        )
    unexplained = raw.kind.unexplained
    if search.stopped_after is not None:
        tried = search.stopped_after
        unexplained = (
            f"the search for a single edit that explains it reached its time bound ({search.bound_s:g} s) "
            + (f"after {tried} alternatives, none of which explains it" if tried else "before trying any")
            + "; the rest were not tried"
        )
    why = f"the stored tensor matches the declared {unit} {search.found}" if search.found else unexplained
    return f"{body}; {why}"


def _details(raw: _Raw, target: str, diff: Difference, tolerance: float, explanation: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"case": raw.case.name, "input": target, "raw": raw.rel, "tolerance": tolerance}
    out["explanation"] = explanation
    if not diff.same_shape:
        return {**out, "rebuilt_shape": list(diff.rebuilt_shape), "stored_shape": list(diff.stored_shape)}
    return {
        **out,
        "largest_difference": _finite(diff.largest),
        "index": list(diff.index or ()),
        "rebuilt_value": diff.rebuilt_value,
        "stored_value": _finite(diff.stored_value),
        "values_beyond_tolerance": diff.count,
    }


def _finite(value: float | None) -> float | str | None:
    return value if value is None or np.isfinite(value) else str(value)
