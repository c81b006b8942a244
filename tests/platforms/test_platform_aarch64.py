"""--platform aarch64-dotprod: an aarch64 userland built once from Debian's packages and the package index's
wheels, then the comparison under qemu-aarch64, online first and then --offline from the cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy
import onnxruntime
import pytest
from platformkit import LIMIT, int8_max_abs, int8_max_abs_arm, needs_arm_userland, write_bundle

from checker.platforms import userland

Cli = Callable[..., tuple[int, str, str]]
CASES = 3


@needs_arm_userland
def test_the_planted_variant_holds_on_aarch64_built_once_then_offline(
    cli: Cli, platform_cache: Path, tmp_path: Path
) -> None:
    bundle = write_bundle(tmp_path / "pairs", CASES)
    # The whole verdict also holds the native run, which saturates on an x86 CPU without VNNI: the exit status
    # is what onnxruntime alone measures here; the aarch64 platform's own status is asserted below.
    native_code = 0 if int8_max_abs(bundle, CASES, None) <= LIMIT else 1
    sets = []
    for extra in ((), ("--offline",)):
        out = tmp_path / f"r{len(sets)}.json"
        code, _, err = cli("verify", bundle, "--platform", "aarch64-dotprod", "--format", "json", "-o", out, *extra)
        report = json.loads(out.read_text())
        assert code == native_code, [
            f["message"] for f in report["bundles"][0]["findings"] if f["severity"] != "info"
        ] or err
        [one] = report["bundles"][0]["runtimes"]
        sets.append(one)
    view = userland.ensure(onnxruntime.__version__, numpy.__version__, True, "cortex-a76")
    expected = int8_max_abs_arm(bundle, CASES, "cortex-a76", view)
    for one in sets:
        assert one["status"] == "pass" and one["platform"]["how"] == "qemu-aarch64 -cpu cortex-a76"
        assert one["platform"]["machine"] == "aarch64" and "ASIMDDP" in one["platform"]["cpu_features"]
        [rule] = [r for c in one["comparisons"] if c["graph"] == "int8" for r in c["rules"]]
        assert rule["measured"] == pytest.approx(expected, rel=1e-6) and expected <= LIMIT
    assert (view / "proc" / "cpuinfo").read_text().count("asimddp") >= 1
