"""What the stages of `checker verify` share: the opened bundle, its manifest, and what earlier stages loaded."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.bundle.paths import BundlePathError, resolve_under
from checker.manifest.load import Manifest
from checker.manifest.model.build import build
from checker.manifest.model.root import Spec

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from checker.preprocess.rebuild import Inputs
    from checker.reports.model import Comparison, NotRun, RuntimeSet
    from checker.reports.parts.gains import Gain
    from checker.reports.parts.placement import Placement, Usability
    from checker.reports.parts.runs import Validation
    from checker.sharding import Shard


@dataclass
class Trust:
    """Whom a signature must come from: a public key, a certificate chain, or a Sigstore identity (the
    signature stage, checks/signature.py, checks bundle.sig against it)."""

    key: Path | None = None
    certificates: list[Path] = field(default_factory=list)
    identity: str | None = None
    issuer: str | None = None

    def whom(self) -> str:
        """The trusted signer in words, for a finding that says a signature is not theirs."""
        if self.key is not None:
            return f"the key {self.key.name}"
        if self.certificates:
            return f"a certificate issued under {', '.join(c.name for c in self.certificates)}"
        return f"the Sigstore identity {self.identity} (issuer {self.issuer})"


@dataclass
class Options:
    """How a run was asked for: set once by the CLI (or the GitHub action), read by the stages."""

    strict: bool = False
    run_validation: bool = False
    run_comparison: bool = True
    progress: bool = False
    providers: list[str] | None = None
    case_timeout_s: float = 600.0  # a graph that runs longer on one case is stopped (a Loop can run for ever)
    jobs: int = 1  # bundles verified at once, each in a worker process (the CLI's default: one per core)
    intra_op_threads: int | None = None  # onnxruntime's threads per session unless the manifest sets them
    shard: Shard | None = None  # judge only this shard of the cases (--shard K/N)
    runtimes: list[str] = field(default_factory=list)  # --runtime SPECs: each judged in its own environment
    offline: bool = False  # runtime environments only from the cache or the wheelhouses
    find_links: list[str] = field(default_factory=list)  # wheelhouses for the runtime environments
    trust: Trust | None = None  # --require-signature: whom bundle.sig must come from
    attestation: Path | None = None  # --require-attestation FILE: accepted on it, the comparison not run
    attestation_trust: Trust | None = None  # the key or CA certificates the attestation must be signed by
    rerun_attested: bool = False  # --rerun: the comparison runs too and its verdict must be the attested one
    platforms: list[str] = field(default_factory=list)  # --platform NAMEs: each judged on that CPU class or engine
    device_outputs: list[Path] = field(default_factory=list)  # --device-outputs DIRs: each judged as a platform
    reproductions: Path | None = None  # --reproductions DIR: where disagreements' folders go (None: the cache)
    opt_levels: list[str] = field(default_factory=list)  # --opt-levels: each judged (else runtime.optimization_levels)
    gain_budget_s: float = 1.0  # per variant: how long the paired timing may run (0: no timing)
    # Per failing variant: the CPU seconds the search for its measured first fix may take (0: not searched).
    fix_budget_s: float = 20.0
    sharing: int = 1  # bundles verified side by side in this run (--jobs): their timings share the cores
    reuse: Path | None = None  # --reuse STORE: a verdict store whose trusted verdicts are reused (checker.store)
    reuse_trust: Trust | None = None  # whom the store's entries must be signed by


@dataclass
class Case:
    """One comparison case, its tensors loaded. `where` is its place in the manifest."""

    name: str
    tags: list[str]
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    raw: dict[str, str]  # input name -> bundle-relative path of the application input
    where: tuple[str | int, ...]
    files: list[str] = field(default_factory=list)
    label: Any = None  # the application's expected answer: a class name or index, or a list (one per item)
    answers: dict[str, str] = field(default_factory=dict)  # answer name -> the stored application answer's file
    # One call of a streamed case (an input declares `stream`): the case it was cut from, and its frame there.
    stream_of: str | None = None
    frame: int = 0


@dataclass
class Context:
    """The state of one bundle's verification. Stages read it and fill the slot they own."""

    root: Path
    manifest: Manifest
    options: Options
    # Bundle-relative paths that were refused or are missing: later stages skip them quietly.
    unusable: set[str] = field(default_factory=set)
    pieces: dict[str, bool] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # bundle-relative path -> sha256 of named files
    # Bundle-relative path -> sha256 of every file this verification has hashed, the first time it read it (a
    # verdict store's look-up, the signature check, the files stage): each file is read for its digest once, so
    # that a graph of gigabytes costs one pass, and the stages judge one reading of the folder.
    hashed: dict[str, str] = field(default_factory=dict)
    graph: onnx.ModelProto | None = None  # loaded without external data
    graph_path: Path | None = None
    labels: dict[str, list[str]] = field(default_factory=dict)  # output name -> labels
    # Outputs whose values are class indices (`labels: {values: index}`), not scores over a labelled axis
    # (labels stage).
    index_outputs: set[str] = field(default_factory=set)
    cases: list[Case] | None = None
    faulty_cases: set[str] = field(default_factory=set)  # loaded cases with comparison.case errors (cases stage)
    # Streamed cases as stored, their frames on a leading axis (cases stage): `cases` holds one case per frame,
    # which the comparison runs once each; the fidelity stage rebuilds the whole stream from its raw file.
    streams: dict[str, Case] = field(default_factory=dict)
    # Every case name of the whole set, in manifest order, when a shard keeps only some (cases stage).
    case_order: list[str] | None = None
    # graph name ("baseline" or a variant) -> case name -> output name -> array
    outputs: dict[str, dict[str, dict[str, np.ndarray]]] = field(default_factory=dict)
    digest: str | None = None  # the bundle digest as computed (files stage)
    folder: dict[str, Any] | None = None  # what the verdict rests on besides the digest (checks/folder.py)
    # Graphs that did not parse or pass the ONNX checker (graph stage); a graph.io mismatch alone is not one.
    bad_graphs: set[str] = field(default_factory=set)
    variant_models: dict[str, onnx.ModelProto] = field(default_factory=dict)  # parsed variant graphs (graph stage)
    label_axes: dict[str, int] = field(default_factory=dict)  # output name -> labelled axis (labels stage)
    # Every input's parsed preprocessing, each block parsed once (checks/prepared.py fills it; the ranges and
    # fidelity stages read it).
    preprocessing: Inputs | None = None
    # The declared answers, ready to decode, and the reference answers of the cases (answers stage; an
    # answers.book.Book, which sits above this module).
    answers: Any = None
    comparisons: list[Comparison] = field(default_factory=list)  # comparison stage
    gains: list[Gain] = field(default_factory=list)  # gain stage: each variant's size and speed
    runtime_sets: list[RuntimeSet] = field(default_factory=list)  # runtimes stage: one set per runtime
    placement: list[Placement] = field(default_factory=list)  # placement and runtimes stages: per provider
    usability: list[Usability] = field(default_factory=list)  # placement stage: NNAPI/CoreML offline coverage
    validation: Validation | None = None  # the validation command's run (validation stage)
    # The predicate of the trusted attestation the bundle was accepted on (attestation stage), for --rerun.
    attested: dict[str, Any] | None = None
    not_run: list[NotRun] = field(default_factory=list)  # checks that could not run here (any stage may add)
    resolved: dict[str, Path] = field(default_factory=dict)  # bundle-relative path -> real path (Context.resolve)
    real_steps: dict[str, str] = field(default_factory=dict)  # the same for each folder on the way (resolve_under)

    @property
    def loaded_cases(self) -> list[Case]:
        """The cases loaded: none before the cases stage, or when it could load none (`cases` is None then)."""
        return self.cases if self.cases is not None else []

    def rebuilt_cases(self) -> list[Case]:
        """The cases as their raw files rebuild them: a streamed case whole, where its first frame kept here."""
        out = []
        for case in self.loaded_cases:
            if case.stream_of is None:
                out.append(case)
            elif case.frame == 0 and case.stream_of in self.streams:
                out.append(self.streams[case.stream_of])
        return out

    @property
    def data(self) -> dict[str, Any]:
        """The manifest as parsed: for the stages that run before the schema gate (completeness, signature)."""
        return self.manifest.data

    @functools.cached_property
    def spec(self) -> Spec:
        """The manifest as typed blocks, built once; only for the stages after the schema gate (a manifest the
        schema rejected has no such form)."""
        return build(Spec, self.manifest.data)

    def where(self, *keys: str | int) -> dict[str, Any]:
        """`file=` and `line=` keyword arguments for a finding about the manifest field at `keys`."""
        return {"file": self.manifest.file, "line": self.manifest.line(*keys)}

    def path(self, rel: str) -> Path | None:
        """The file a manifest path names, or None when it was refused or is missing."""
        if rel in self.unusable:
            return None
        try:
            return self.resolve(rel)
        except BundlePathError:
            return None

    def resolve(self, rel: str) -> Path:
        """resolve_inside, once per path: the files stage and the cases stage look up the same files."""
        found = self.resolved.get(rel)
        if found is None:
            found = self.resolved[rel] = resolve_under(self.real_root, rel, self.real_steps)
        return found

    @functools.cached_property
    def real_root(self) -> str:
        return os.path.realpath(self.root)
