"""Hostile manifests at the size bound: each gets its finding in seconds, and no sooner refused than a plain one
of the same size is read.

    python benchmarks/bench_hostile_manifest.py [--repeat 3] [--mib 16] [--only NAME]

Each shape is a bundle whose `bundle.yaml` is just under the 16 MiB bound (`--mib`), the costly part at its end so
the whole text is read before the finding: the issue's fuzzed manifest grown to the bound (tens of thousands of
outputs and one complex key, a YAML `? [a, b] : c` mapping key), a wide list (refused at the node count), long
strings, nesting just under the depth bound, an anchor, a tag (a doubt only ruamel.yaml could settle, which it is
too slow to be asked about at this size) and a repeated key. `plain` is the control: a valid manifest of the same
size (100,000 cases, the schema's most), read whole; its later stages find the case files missing.

For each shape the script runs `checker verify BUNDLE --format json` as a whole process, `--repeat` times after one
warm-up, and prints the median wall and CPU time (user + system, steadier when other work shares the machine) and
the finding. The time spent reading the manifest is printed apart (`load_manifest` in this process, the median of
the same runs). Target: every hostile shape's finding in under 10 s of wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from material import checker_command, measure, median

from checker.manifest.load import MAX_MANIFEST_BYTES, load_manifest

TARGET_S = 10.0


def skeleton() -> dict[str, Any]:
    """A valid manifest but for the cases' files, which are not there: the part every shape starts from."""
    return {
        "manifest_version": 1,
        "release": {"name": "hostile", "version": "1.0.0"},
        "graph": {"path": "model.onnx"},
        "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", 4], "meaning": "tensor"}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 4], "meaning": "embedding"}],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": "hostile"},
            "cases": [{"name": "case-0", "inputs": {"x": "cases/x0.npy"}, "expected": {"y": "cases/y0.npy"}}],
            "rules": [{"output": "y", "check": "allclose", "atol": 1e-6, "rtol": 1e-6}],
        },
    }


def head() -> str:
    return json.dumps(skeleton(), indent=1) + "\n"


def fill(size: int, start: str, unit: Callable[[int], str], end: str, most: int = 1 << 62) -> str:
    """`start`, then `unit(i)` for i = 0, 1, … (at most `most`) while the text stays under `size` bytes, then `end`."""
    parts, total, i = [start], len(start) + len(end), 0
    while i < most:
        piece = unit(i)
        if total + len(piece) > size:
            break
        parts.append(piece)
        total += len(piece)
        i += 1
    parts.append(end)
    return "".join(parts)


def block(data: dict[str, Any]) -> str:
    """The skeleton as block YAML without its closing, so more top-level keys can follow."""
    import yaml

    return str(yaml.safe_dump(data, sort_keys=False, width=1 << 16))


def outputs_and_complex_key(size: int) -> str:
    data = skeleton()
    del data["outputs"]
    output = (  # about 200 bytes an output, as in the fuzzed manifest that took minutes (20,000 in 3.9 MB)
        "  - name: encoder/layer_{i:06d}/attention/self_attention/output_projection/quantized_matmul/output_0\n"
        "    dtype: float32\n    shape: [batch, sequence, 768]\n    meaning: embedding\n"
    )
    return fill(size, block(data) + "outputs:\n", lambda i: output.format(i=i), "? [a, b]\n: c\n")


def wide_list(size: int) -> str:
    return fill(size, block(skeleton()) + "x: [", lambda i: "1," if i else "1", "]\n")


def long_strings(size: int) -> str:
    """Four strings of a quarter of the size each, in fields the schema bounds to 4096 characters or fewer."""
    data = skeleton()
    chunk = (size - len(block(data)) - 64) // 4
    data["release"]["description"] = "x" * chunk
    data["graph"]["path"] = "x" * chunk
    data["validation"]["command"] = "x" * chunk
    data["comparison"]["reference"]["description"] = "x" * chunk
    return block(data)


def deep_nesting(size: int) -> str:
    """Chains of mappings 62 levels deep (the bound is 64) under one unknown key, over and over."""
    chain = "".join(f"{'  ' * (d + 1)}k{d}:\n" for d in range(61)) + f"{'  ' * 62}k: 1\n"
    return fill(size, block(skeleton()), lambda i: f"deep{i}:\n" + chain, "")


def anchor_at_end(size: int) -> str:
    return plain(size - 32) + "tail: &a 1\n"


def tag_at_end(size: int) -> str:
    return plain(size - 32) + "tail: !!str 1\n"


def repeated_key(size: int) -> str:
    return plain(size - 32) + "runtime: {}\n"


def plain(size: int) -> str:
    """A valid manifest of up to 100,000 cases (the schema's most), in block YAML as tools write it."""
    import textwrap

    data = skeleton()
    comparison = data.pop("comparison")
    del comparison["cases"]
    start = block(data) + "comparison:\n" + textwrap.indent(block(comparison), "  ") + "  cases:\n"
    case = (
        "    - name: case-{i:06d}\n      tags: [ordinary]\n"
        "      inputs: {{x: cases/inputs/pixel_values/x{i:06d}.npy}}\n"
        "      expected: {{y: cases/reference-outputs/y{i:06d}.npy}}\n"
    )
    return fill(size, start, lambda i: case.format(i=i), "", most=100_000)


SHAPES: dict[str, Callable[[int], str]] = {
    "outputs+complex key": outputs_and_complex_key,
    "wide list": wide_list,
    "long strings": long_strings,
    "deep nesting": deep_nesting,
    "anchor at end": anchor_at_end,
    "tag at end": tag_at_end,
    "repeated key": repeated_key,
}


def first_finding(report: Path) -> str:
    """The report's first finding and how many there are, in a few words."""
    try:
        findings = json.loads(report.read_text(encoding="utf-8"))["bundles"][0]["findings"]
    except (OSError, ValueError, KeyError, IndexError):
        return "no report"
    if not findings:
        return "no finding"
    top = findings[0]
    more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
    return f"{top['id']} line {top.get('line')}: {top['message'][:70]}{more}"


def load_seconds(manifest: Path) -> float:
    start = time.process_time()
    load_manifest(manifest)
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mib", type=float, default=MAX_MANIFEST_BYTES / (1 << 20))
    parser.add_argument("--only", action="append", choices=list(SHAPES))
    args = parser.parse_args()
    size = min(int(args.mib * (1 << 20)), MAX_MANIFEST_BYTES) - 1024
    missed = False
    with tempfile.TemporaryDirectory() as tmp:
        control = Path(tmp) / "plain.yaml"
        control.write_text(plain(size), encoding="utf-8")
        read = median([load_seconds(control) for _ in range(args.repeat)])
        print(f"plain (the control)  {control.stat().st_size / (1 << 20):5.1f} MiB  load_manifest {read:5.2f} s cpu")
        for name, make in SHAPES.items():
            if args.only and name not in args.only:
                continue
            missed |= not run_shape(name, make(size), Path(tmp), args.repeat)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 1 if missed else 0


def run_shape(name: str, text: str, tmp: Path, repeat: int) -> bool:
    """Time `checker verify` on one shape and print the figures; True when within the target."""
    root = tmp / name.replace(" ", "-").replace("+", "-")
    root.mkdir()
    (root / "bundle.yaml").write_text(text, encoding="utf-8")
    command = [*checker_command(), "verify", str(root), "--format", "json", "--output", str(root / "r.json")]
    subprocess.run(command, capture_output=True, check=False)  # warm-up, and the report to quote
    runs = [measure(command) for _ in range(repeat)]
    loads = [load_seconds(root / "bundle.yaml") for _ in range(repeat)]
    wall, cpu = median([r.wall_s for r in runs]), median([r.cpu_s for r in runs])
    peak = max(r.peak_rss_mib for r in runs)
    mib = (root / "bundle.yaml").stat().st_size / (1 << 20)
    verdict = "OK" if wall < TARGET_S else "MISSED"
    print(
        f"{name:<20} {mib:5.1f} MiB  load_manifest {median(loads):5.2f} s cpu; checker verify: wall {wall:6.2f} s, "
        f"cpu {cpu:6.2f} s, peak {peak:4.0f} MiB: {verdict}\n    {first_finding(root / 'r.json')}",
        flush=True,
    )
    return verdict == "OK"


if __name__ == "__main__":
    sys.exit(main())
