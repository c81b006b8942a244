"""`checker verify PATH... --reuse STORE`: each bundle's stored verdict looked up first, and only the bundles
without a trusted one verified.

A look-up hashes the bundle's files and reads one entry, a few milliseconds; a verification costs seconds. So
that a pull request of one changed bundle among hundreds costs about that one bundle, the work is not done in
two phases: each worker (`--jobs`) takes the next bundle, looks it up, and verifies it there and then when it
must, while the other workers go on looking up the rest. The stages are imported only by a process that
verifies a bundle: a run whose verdicts are all reused never loads onnxruntime.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker import __version__
from checker.context import Options
from checker.errors import UsageError
from checker.readers.environment import environment
from checker.reports.model import BundleReport, Report
from checker.signing.attest import StatementChecker
from checker.store.entries import Store
from checker.store.key import Machine
from checker.store.lookup import look_up
from checker.workers import pool_size, start_method, worker_options


@dataclass
class Outcome:
    """One bundle's report, the key it is filed under, and the stored document when its verdict was reused."""

    report: BundleReport
    parts: dict[str, Any] | None = None
    document: dict[str, Any] | None = None


@dataclass
class Reusing:
    """A run with a verdict store: the report, and each bundle's outcome in the same order."""

    report: Report
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def reused(self) -> int:
        return sum(1 for o in self.outcomes if o.document is not None)


@dataclass
class _State:
    """What every look-up of one run shares: the store as listed once, this machine, the options, the checker
    of signatures (one per process)."""

    store: Store
    machine: Machine
    options: Options
    checker: StatementChecker


_WORKER_STATE: _State | None = None  # a worker process's, set once when it starts


def verify_reusing(paths: list[str], options: Options) -> Reusing:
    if options.reuse is None or options.reuse_trust is None:
        raise UsageError("--reuse needs a store and the signer whose verdicts it may reuse")
    store = Store.open(options.reuse)
    machine = Machine.here()
    given = [Path(p) for p in paths]
    workers = pool_size(given, options.jobs)
    if workers <= 1:
        state = _State(store, machine, options, StatementChecker(options.reuse_trust))
        outcomes = [_one(state, path) for path in given]
        env = environment()
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        state = _State(store, machine, worker_options(options, workers), StatementChecker(options.reuse_trust))
        context = multiprocessing.get_context(start_method())
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_start, initargs=(state,)) as pool:
            outcomes = list(pool.map(_one_here, given))  # one bundle a task: the next free worker takes the next
            env = pool.submit(environment).result()
    report = Report(__version__, [o.report for o in outcomes], options.strict, env)
    return Reusing(report, outcomes)


def _start(state: _State) -> None:
    global _WORKER_STATE
    _WORKER_STATE = state


def _one_here(path: Path) -> Outcome:
    if _WORKER_STATE is None:
        raise RuntimeError("a worker started without the store's state")
    return _one(_WORKER_STATE, path)


def _one(state: _State, path: Path) -> Outcome:
    started = time.perf_counter()
    looked = look_up(path, state.options, state.machine, state.store, state.checker)
    if looked.report is not None:
        return Outcome(looked.report, looked.parts, looked.document)
    # The stages, loaded by the process that verifies a bundle, when it first does.
    from checker.verify import verify_bundle

    report = verify_bundle(path, state.options)
    report.add(looked.findings)
    report.duration_s = round(time.perf_counter() - started, 3)
    return Outcome(report, looked.parts)
