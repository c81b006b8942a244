"""A model zoo's pull request with a warm verdict store, against verifying the changed bundle alone.

    python benchmarks/bench_zoo.py [--bundles 200] [--subset 40] [--repeat 3] [--jobs 2] [--large-mib 0]

Generates a zoo of `--bundles` releases (copies of examples/mobilenet-tiny, each its own name and so its own
digest, locked), verifies them all once with `--attest --reuse STORE` (the full run, timed once), then changes
one bundle (its version) and times, interleaved: that bundle verified alone (`checker verify ONE`), and the
pull request's run over the first `--subset` bundles and over the whole zoo (`checker verify ZOO... --reuse
STORE`, which reuses every verdict but the changed bundle's). It checks that the pull request's run verified
exactly the changed bundle and reused the rest, and reports the store's size per bundle. With `--large-mib N`
the changed bundle is a large one instead (`bench_memory.py`'s: one MatMul over N MiB of weights in an
external-data file), for the pull request that changes a heavy release of the zoo.

Targets (issue 34): the `--subset` (40) pull request at most 1.5x the one bundle alone, the whole zoo's (200) at
most 1.2x.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench_memory import write_bundle
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from material import Measured, checker_command, measure, median

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "mobilenet-tiny"
ENTRY_SUFFIX = ".intoto.jsonl"


def make_zoo(folder: Path, count: int) -> list[Path]:
    from checker.release.lock import lock

    bundles = []
    for i in range(count):
        dest = folder / f"m{i:03d}"
        shutil.copytree(EXAMPLE, dest)
        manifest = dest / "bundle.yaml"
        manifest.write_text(manifest.read_text().replace("name: mobilenet-tiny", f"name: m{i:03d}", 1))
        assert lock(dest).ok
        bundles.append(dest)
    return bundles


def keys(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = folder / "attest.pem", folder / "attest.pub"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


def make_large(folder: Path, mib: float) -> None:
    """A bundle of `mib` MiB of weights in place of the zoo's bundle at `folder`, locked."""
    from checker.release.lock import lock

    shutil.rmtree(folder)
    write_bundle(folder, int((mib * (1 << 20) / 4) ** 0.5), cases=4)
    assert lock(folder).ok


def change_version(folder: Path) -> None:
    """The bundle's release version raised and the bundle locked again: a new digest, nothing else changed."""
    from checker.release.lock import lock

    manifest = folder / "bundle.yaml"
    if manifest.is_file():
        manifest.write_text(manifest.read_text().replace("version: 1.0.0", "version: 1.0.1", 1))
    else:
        manifest = folder / "bundle.json"
        data = json.loads(manifest.read_text())
        data["release"]["version"] = "1.0.1"
        manifest.write_text(json.dumps(data, indent=2))
    assert lock(folder).ok


def reused_and_run(cmd: list[str]) -> tuple[list[str], list[str]]:
    out = subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True, check=False).stdout
    bundles = json.loads(out)["bundles"]
    return [b["path"] for b in bundles if b.get("reused")], [b["path"] for b in bundles if not b.get("reused")]


def show(name: str, runs: list[Measured]) -> str:
    walls = ", ".join(f"{m.wall_s:.2f}" for m in runs)
    wall, cpu = median([m.wall_s for m in runs]), median([m.cpu_s for m in runs])
    return f"{name:>22}: wall {wall:6.2f} s (runs {walls}); cpu {cpu:6.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundles", type=int, default=200)
    parser.add_argument("--subset", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--large-mib", type=float, default=0.0, help="the changed bundle: this many MiB of weights")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-zoo-") as tmp:
        folder = Path(tmp)
        bundles = make_zoo(folder / "zoo", args.bundles)
        changed = bundles[args.subset // 2]
        if args.large_mib:
            make_large(changed, args.large_mib)
        private, public = keys(folder)
        store = folder / "store"
        checker = [*checker_command(), "verify"]
        trusted = ["--reuse", str(store), "--trusted-key", str(public), "--jobs", str(args.jobs)]
        full = measure([*checker, *map(str, bundles), *trusted, "--attest", str(folder / "a.jsonl"),
                        "--attest-key", str(private)])  # fmt: skip
        entries = [p for p in store.iterdir() if p.name.endswith(ENTRY_SUFFIX)]
        size = sum(p.stat().st_size for p in entries)
        print(f"{args.bundles} bundles (examples/mobilenet-tiny, each its own release), --jobs {args.jobs}")
        if args.large_mib:
            print(f"the changed bundle, {changed.name}: {args.large_mib:g} MiB of weights (bench_memory.py's)")
        print(f"full run with --attest: wall {full.wall_s:.1f} s, cpu {full.cpu_s:.1f} s; exit {full.returncode}")
        per = size / max(1, len(entries)) / 1024
        print(f"store: {len(entries)} entries, {size / 1024:.1f} KiB, {per:.2f} KiB per bundle")

        change_version(changed)
        cmds = {
            "one bundle alone": [*checker, str(changed), "--jobs", str(args.jobs)],
            f"pull request of {args.subset}": [*checker, *map(str, bundles[: args.subset]), *trusted],
            f"pull request of {args.bundles}": [*checker, *map(str, bundles), *trusted],
        }
        for name in list(cmds)[1:]:
            reused, ran = reused_and_run(cmds[name])
            print(f"{name}: verified {ran}, reused {len(reused)}")
            assert ran == [str(changed)], ran
        results: dict[str, list[Measured]] = {name: [] for name in cmds}
        for cmd in cmds.values():  # once each to warm the page cache
            measure(cmd)
        for _ in range(args.repeat):  # interleaved, so a slow spell of the machine hits all alike
            for name, cmd in cmds.items():
                results[name].append(measure(cmd))
        for name, runs in results.items():
            print(show(name, runs))
        alone = median([m.wall_s for m in results["one bundle alone"]])
        for name, target in ((f"pull request of {args.subset}", 1.5), (f"pull request of {args.bundles}", 1.2)):
            ratio = median([m.wall_s for m in results[name]]) / alone
            verdict = "OK" if ratio <= target else "MISSED"
            print(f"{name} / one alone: median wall {ratio:.3f} (target <= {target}) {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
