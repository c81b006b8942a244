"""A fuzz campaign: fresh inputs of every family through `checker verify`, in a bounded worker process.

    python scripts/fuzz_campaign.py --inputs 20000 --minutes 600 --memory-gib 4 --timeout 90 --out fuzz-out

The generators are the test suite's (tests/fuzz/generators.py). The parent draws inputs with Hypothesis and
writes each into a fresh folder; a worker process, under an address-space limit, verifies them one after the
other through the CLI in-process (so imports are paid once) and answers with the exit status, any
internal.error findings and any report-schema problems. An input the worker does not finish within the
timeout is a hang: the worker is killed and started again; a worker that dies is a crash. At the end the
counts are printed and written to OUT/summary.json, with every failing input described in OUT/failures.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "fuzz"), str(REPO / "tests")]

# The mix: mostly mutated manifests, then the schema's, archives, tensor files and graphs,
# rules and preprocessing blocks.
WEIGHTS = {
    "mutated_manifests": 52,
    "schema_manifests": 12,
    "archives": 12,
    "tensor_files": 6,
    "graphs": 6,
    "rules": 6,
    "preprocessing": 6,
}
BATCH = 10


def worker() -> int:
    """Read 'TARGET\\tREPORT' lines; answer one JSON line each."""
    from harness import report_problems, run_verify

    for line in sys.stdin:
        target, report = line.rstrip("\n").split("\t")
        start = time.monotonic()
        try:
            outcome = run_verify(Path(target), Path(report))
            internal = [
                f
                for b in (outcome.report or {}).get("bundles", [])
                for f in b["findings"]
                if f["id"] == "internal.error"
            ]
            answer = {
                "code": outcome.code,
                "internal": [_signature(f) for f in internal],
                "schema": report_problems(outcome.report)[:3],
                "stderr": outcome.stderr[-3000:] if outcome.code not in (0, 1) else "",
            }
        except BaseException as exc:  # the CLI itself raised: the worst kind of crash
            answer = {"code": -1, "internal": [f"{type(exc).__name__}: {exc}"[:300]], "schema": [], "stderr": ""}
        answer["seconds"] = round(time.monotonic() - start, 3)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


def _signature(finding: dict[str, Any]) -> str:
    """The exception type and the innermost frame of the checker, as a crash signature."""
    trace = str((finding.get("details") or {}).get("traceback", ""))
    frames = [line.strip() for line in trace.splitlines() if line.strip().startswith('File "')]
    ours = [f for f in frames if "/checker/" in f] or frames
    last = trace.strip().splitlines()[-1] if trace.strip() else finding["message"]
    return f"{last.split(':')[0]} at {ours[-1] if ours else '?'}"


class Worker:
    def __init__(self, memory_gib: float) -> None:
        self.memory = int(memory_gib * (1 << 30))
        self.proc = self._start()

    def _start(self) -> subprocess.Popen[str]:
        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))

        return subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=limit,
            cwd=REPO,
        )

    def run(self, target: Path, report: Path, timeout: float) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(f"{target}\t{report}\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.restart()
            return {"code": -2, "internal": ["worker died before the input"], "schema": []}
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.restart()
            return {"code": "hang", "internal": [], "schema": []}
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.restart()
            return {"code": -2, "internal": [f"worker died (exit {code}: out of memory or a signal)"], "schema": []}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def restart(self) -> None:
        self.stop()
        self.proc = self._start()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # only this campaign's own worker, by its handle
        self.proc.wait()


def campaign(args: argparse.Namespace) -> dict[str, Any]:
    from generators import FAMILIES, FuzzInput
    from hypothesis import HealthCheck, Phase, given, settings

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failures = (out / "failures.jsonl").open("w", encoding="utf-8")
    worker_ = Worker(args.memory_gib)
    stats: Counter[str] = Counter()
    per_family: Counter[str] = Counter()
    signatures: Counter[str] = Counter()
    slowest = [0.0, ""]
    deadline = time.monotonic() + args.minutes * 60
    scratch = Path(tempfile.mkdtemp(prefix="checker-campaign-"))

    def one(item: FuzzInput) -> None:
        if stats["inputs"] >= args.inputs or time.monotonic() > deadline:
            return
        folder = scratch / str(stats["inputs"])
        folder.mkdir()
        try:
            target = item.write(folder)
        except Exception as exc:  # a generator that cannot write its input is the campaign's bug, not the checker's
            stats["unwritable"] += 1
            shutil.rmtree(folder, ignore_errors=True)
            failures.write(json.dumps({"kind": "unwritable", "input": repr(item)[:2000], "error": repr(exc)}) + "\n")
            return
        answer = worker_.run(target, folder / "report.json", args.timeout)
        shutil.rmtree(folder, ignore_errors=True)
        stats["inputs"] += 1
        per_family[item.family] += 1
        kind = _kind(answer)
        stats[kind] += 1
        if answer.get("seconds", 0) > slowest[0]:
            slowest[:] = [answer["seconds"], repr(item)[:300]]
        if kind != "ok":
            for sig in answer.get("internal") or [kind]:
                signatures[sig] += 1
            failures.write(json.dumps({"kind": kind, "answer": answer, "input": repr(item)[:8000]}) + "\n")
            failures.flush()

    families = [name for name, weight in WEIGHTS.items() for _ in range(weight)]
    turn = 0
    try:
        while stats["inputs"] < args.inputs and time.monotonic() < deadline:
            family = families[(turn * 37) % len(families)]  # a fixed stride through the weighted list
            turn += 1

            @settings(
                max_examples=BATCH,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(FAMILIES[family]())
            def batch(item: FuzzInput) -> None:
                one(item)

            try:
                batch()
            except Exception as exc:  # a generator's own bug: note it and go on with fresh inputs
                stats["generator_errors"] += 1
                failures.write(json.dumps({"kind": "generator", "family": family, "error": repr(exc)[:2000]}) + "\n")
            if turn % 20 == 0:
                print(json.dumps({"elapsed_s": round(time.monotonic() - deadline + args.minutes * 60), **stats}))
    finally:
        worker_.stop()
        failures.close()
        shutil.rmtree(scratch, ignore_errors=True)
    summary = {
        "inputs": stats["inputs"],
        "ok": stats["ok"],
        "crashes": stats["crash"],
        "hangs": stats["hang"],
        "schema_violations": stats["schema"],
        "unwritable_inputs": stats["unwritable"],
        "generator_errors": stats["generator_errors"],
        "per_family": dict(per_family),
        "signatures": dict(signatures.most_common()),
        "slowest_s": slowest[0],
        "slowest_input": slowest[1],
        "memory_gib": args.memory_gib,
        "timeout_s": args.timeout,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _kind(answer: dict[str, Any]) -> str:
    if answer["code"] == "hang":
        return "hang"
    if answer["code"] not in (0, 1) or answer.get("internal"):
        return "crash"
    if answer.get("schema"):
        return "schema"
    return "ok"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", type=int, default=1000, help="stop after this many inputs (default 1000)")
    parser.add_argument("--minutes", type=float, default=30.0, help="stop after this long (default 30)")
    parser.add_argument("--memory-gib", type=float, default=4.0, help="the worker's address-space limit")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds before an input counts as a hang")
    parser.add_argument("--out", default="fuzz-out", help="folder for summary.json and failures.jsonl")
    args = parser.parse_args()
    if args.worker:
        return worker()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    summary = campaign(args)
    print(json.dumps({k: v for k, v in summary.items() if k != "slowest_input"}, indent=2))
    return 0 if summary["crashes"] == summary["hangs"] == summary["schema_violations"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
