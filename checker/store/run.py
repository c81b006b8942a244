"""`checker verify PATH... --reuse STORE`: each bundle's stored verdict looked up first, and only the bundles
without a trusted one verified.

A look-up hashes the bundle's files and reads one entry, about a millisecond; a verification costs seconds. So that
a pull request of one changed bundle among hundreds costs about that one bundle, this process first reads each
locked bundle's `bundle.sha256` and finds those the store surely has no verdict of (no entry of the listed digest
under their key: no file hashed, no signature checked), and hands each of those at once to a worker (`--jobs`),
which looks it up and verifies it; then it looks the others up in order while the workers verify (one that must run
after all is handed on as it is found). A worker that has verified what it was given takes a share of the look-ups
(the last ones left; it runs a bundle it finds must run), so that both cores hash once the run is done. The guess
only orders the look-ups and sizes the pool (the bundles it expects to run, and those that list nothing): each
bundle's own look-up decides, wherever it is done. The workers start at the first bundle expected or found to run,
and the stages are imported only by the process that verifies one: a run in which no list guesses a run and every
verdict is reused starts no worker and never loads onnxruntime. (This process does not verify a bundle itself beside
the workers' look-ups: the threads that hand them their shares and take back their reports would share its
interpreter with the run.) The reports keep the order of the paths given."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker import __version__
from checker.context import Options
from checker.errors import UsageError
from checker.readers.environment import environment
from checker.reports.model import BundleReport, Report
from checker.signing.attest import StatementChecker
from checker.store.entries import Store
from checker.store.key import Keys, Machine
from checker.store.lookup import Listed, Looked, listed, look_up, unstored
from checker.workers import pool_size, start_method, worker_options

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor


@dataclass
class Outcome:
    """One bundle's report, the key it is filed under, and the stored document when its verdict was reused."""

    report: BundleReport
    parts: dict[str, Any] | None = None
    document: dict[str, Any] | None = None
    environment: dict[str, str] | None = None  # the versions a run used, read by the process that ran it


@dataclass
class Reusing:
    """A run with a verdict store: the report, and each bundle's outcome in the same order."""

    report: Report
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def reused(self) -> int:
        return sum(1 for o in self.outcomes if o.document is not None)


def verify_reusing(paths: list[str], options: Options) -> Reusing:
    if options.reuse is None or options.reuse_trust is None:
        raise UsageError("--reuse needs a store and the signer whose verdicts it may reuse")
    store = Store.open(options.reuse)
    keys = Keys.of(Machine.here(), options)
    checker = StatementChecker(options.reuse_trust)
    given = [Path(p) for p in paths]
    # Each locked bundle's list, and the guess it allows: the bundles whose listed digest the store holds no
    # entry of will run. Those and the bundles that list nothing are the ones the workers are sized for.
    lists = [listed(path, keys) for path in given]
    first = [i for i, found in enumerate(lists) if found is not None and unstored(found, store)]
    expected = set(first) | {i for i, found in enumerate(lists) if found is None}
    runs = _Runs([p for i, p in enumerate(given) if i in expected], options)
    outcomes: dict[int, Outcome | Future[Outcome]] = {}

    def looked_up(i: int) -> Outcome | Future[Outcome]:
        looked = look_up(given[i], options, keys, store, checker, lists[i])
        return _reused(looked) or runs.verify(given[i], looked)

    def hand(share: list[int]) -> Future[list[Outcome]]:
        return runs.look_up([given[i] for i in share], [lists[i] for i in share], keys, store)

    try:
        # The bundles that will run, first: each is handed to a worker at once, which looks it up there (the
        # digest of its files decides, not its list's) and verifies it; so its run starts before the rest are
        # looked up, and before this process loads what a full look-up loads (the manifest's parser), which the
        # run loads anyway.
        for i in first:
            outcomes[i] = runs.looked_up_there(given[i], lists[i], keys, store) if options.jobs > 1 else looked_up(i)
        rest = [i for i in range(len(given)) if i not in outcomes]
        shares = [rest[k : k + SHARE] for k in range(0, len(rest), SHARE)]
        for share, taken in _share_out(shares, runs, looked_up, outcomes, hand):
            outcomes.update(zip(share, taken.result()))
        done = [o if isinstance(o, Outcome) else o.result() for o in (outcomes[i] for i in range(len(given)))]
        env = next((o.environment for o in done if o.environment is not None), None) or runs.environment()
    finally:
        runs.close()
    report = Report(__version__, [o.report for o in done], options.strict, env)
    return Reusing(report, done)


def _reused(looked: Looked) -> Outcome | None:
    return Outcome(looked.report, looked.parts, looked.document) if looked.report is not None else None


def _share_out(
    shares: list[list[int]],
    runs: _Runs,
    looked_up: Callable[[int], Outcome | Future[Outcome]],
    outcomes: dict[int, Outcome | Future[Outcome]],
    hand: Callable[[list[int]], Future[list[Outcome]]],
) -> list[tuple[list[int], Future[list[Outcome]]]]:
    """The shares looked up here from the first, and by a worker that has verified what it was given from the
    last: a share is handed only to a worker that is free, so that no look-up waits behind a run, and only while
    this process has more left than a worker's first share costs (it loads the signature checks), so that this
    process does not end waiting for it."""
    front, back, handed = 0, len(shares), list[tuple[list[int], Future[list[Outcome]]]]()
    while front < back:
        if back - front > KEPT_SHARES and runs.free() > 0:
            back -= 1
            handed.append((shares[back], hand(shares[back])))
            continue
        for i in shares[front]:
            outcomes[i] = looked_up(i)
        front += 1
    return handed


class _Runs:
    """The bundles that must run: verified in this process (`--jobs 1`), or each handed to a worker of a pool
    made when the first of them is found."""

    def __init__(self, expected: list[Path], options: Options) -> None:
        self.expected, self.options = expected, options
        self.pool: ProcessPoolExecutor | None = None
        self.workers = 0
        self.handed: list[Future[Any]] = []  # what the workers were given, to tell when one is free

    def free(self) -> int:
        """Workers with nothing to do (none before the first bundle that must run)."""
        self.handed = [f for f in self.handed if not f.done()]
        return self.workers - len(self.handed) if self.pool is not None else 0

    def verify(self, path: Path, looked: Looked) -> Outcome | Future[Outcome]:
        if self.options.jobs <= 1:
            return _verified(path, looked, self.options)
        # Its run may wait behind others: it hashes the files itself, as they are when it starts, rather than
        # judge files that may have changed since by the digests they had then.
        return self._submit(path, _verified, path, replace(looked, hashed={}))

    def looked_up_there(self, path: Path, found: Listed | None, keys: Keys, store: Store) -> Future[Outcome]:
        """A bundle expected to run, handed to a worker that looks it up and, when it must, verifies it."""
        return self._submit(path, _looked_up_one, path, found, keys, store)

    def look_up(self, paths: list[Path], lists: list[Listed | None], keys: Keys, store: Store) -> Future[list[Outcome]]:
        """The bundles' look-ups, handed to a worker."""
        return self._submit(paths[0], _looked_up_there, paths, lists, keys, store)

    def _submit(self, path: Path, work: Callable[..., Any], *args: Any) -> Future[Any]:
        """`work(*args, options)` handed to a worker, the cores shared between the workers only: this process's
        look-ups take a millisecond a bundle, and a run on a core less would cost a large graph far more (a
        512 MiB one took a fifth longer)."""
        pool = self._pool(path)
        self.handed.append(pool.submit(work, *args, worker_options(self.options, self.workers)))
        return self.handed[-1]

    def _pool(self, path: Path) -> ProcessPoolExecutor:
        if self.pool is None:
            # As many workers as the bundles expected to run need, and the memory holds for the largest of them:
            # sizing every bundle of a zoo would cost its one changed bundle's start a tenth of a second.
            sized = self.expected if path in self.expected else [*self.expected, path]
            self.workers = pool_size(sized, self.options.jobs)
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context(start_method())
            self.pool = ProcessPoolExecutor(self.workers, mp_context=context)
        return self.pool

    def environment(self) -> dict[str, str]:
        """The versions the bundles were verified with, read by a worker that loaded them when one ran."""
        return self.pool.submit(environment).result() if self.pool is not None else environment()

    def close(self) -> None:
        """The workers told to stop, not waited for: they exit while the report is written (every result is in;
        the interpreter joins them when this process exits)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def _verified(path: Path, looked: Looked, options: Options) -> Outcome:
    # The stages, loaded by the process that verifies a bundle, when it first does.
    from checker.verify import verify_bundle

    report = verify_bundle(path, options, looked.hashed)
    report.add(looked.findings)
    return Outcome(report, looked.parts, environment=environment())


SHARE = 8  # bundles a worker looks up at a time: some thirty milliseconds of work, much more than a hand-over
KEPT_SHARES = 4  # the last shares, looked up here: a worker's first share also loads cryptography (0.1 s)


def _looked_up_one(path: Path, found: Listed | None, keys: Keys, store: Store, options: Options) -> Outcome:
    return _looked_up_there([path], [found], keys, store, options)[0]


def _looked_up_there(
    paths: list[Path], lists: list[Listed | None], keys: Keys, store: Store, options: Options
) -> list[Outcome]:
    """Look-ups done by a worker, each judged as this process judges it (its own signature checker, the same
    store, key and rules); a bundle that must run after all is verified here and then."""
    assert options.reuse_trust is not None
    checker = StatementChecker(options.reuse_trust)
    out = []
    for path, found in zip(paths, lists):
        looked = look_up(path, options, keys, store, checker, found)
        out.append(_reused(looked) or _verified(path, looked, options))
    return out
