"""The key a verdict is filed under: every option that can change a verdict is in it, and nothing that cannot."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from checker.context import Options, Trust
from checker.sharding import parse_shard
from checker.store.key import OTHER_OPTIONS, VERDICT_OPTIONS, Machine, differences, key_of, key_parts, onnxruntime_build

DIGEST = "sha256:" + "ab" * 32
MACHINE = Machine("0.1.0", {"package": "onnxruntime", "version": "1.32.0"}, "x86-64-v3")


def test_every_option_is_classed() -> None:
    names = {f.name for f in dataclasses.fields(Options)}
    assert set(VERDICT_OPTIONS) | set(OTHER_OPTIONS) == names
    assert not set(VERDICT_OPTIONS) & set(OTHER_OPTIONS)


@pytest.mark.parametrize(
    "change",
    [
        {"strict": True},
        {"run_validation": True},
        {"platforms": ["aarch64-dotprod"]},
        {"runtimes": ["1.17.3"]},
        {"opt_levels": ["basic"]},
        {"providers": ["CPUExecutionProvider"]},
        {"gain_budget_s": 0.0},
        {"case_timeout_s": 5.0},
        {"shard": parse_shard("1/2")},
    ],
)
def test_a_verdict_changing_option_changes_the_key(change: dict[str, object]) -> None:
    plain = key_of(key_parts(DIGEST, MACHINE, Options()))
    assert key_of(key_parts(DIGEST, MACHINE, Options(**change))) != plain  # type: ignore[arg-type]


def test_what_cannot_change_a_verdict_keeps_the_key(tmp_path: Path) -> None:
    plain = key_of(key_parts(DIGEST, MACHINE, Options()))
    same = Options(jobs=7, intra_op_threads=3, progress=True, offline=True, find_links=["w"], sharing=2,
                   reuse=tmp_path, reuse_trust=Trust(tmp_path / "k.pub"))  # fmt: skip
    assert key_of(key_parts(DIGEST, MACHINE, same)) == plain


def test_the_machine_and_the_bundle_are_in_the_key() -> None:
    plain = key_parts(DIGEST, MACHINE, Options())
    other_cpu = key_parts(DIGEST, dataclasses.replace(MACHINE, cpu_class="x86-64-v4-vnni"), Options())
    openvino = dataclasses.replace(MACHINE, onnxruntime={"package": "onnxruntime-openvino"})
    other_ort = key_parts(DIGEST, openvino, Options())
    other_checker = key_parts(DIGEST, dataclasses.replace(MACHINE, checker="0.2.0"), Options())
    other_bundle = key_parts("sha256:" + "cd" * 32, MACHINE, Options())
    keys = {key_of(p) for p in (plain, other_cpu, other_ort, other_checker, other_bundle)}
    assert len(keys) == 5
    assert differences(other_cpu, plain) == ['cpu_class: "x86-64-v3" -> "x86-64-v4-vnni"']


def test_a_trusted_file_is_keyed_by_its_content(tmp_path: Path) -> None:
    key = tmp_path / "k.pub"
    key.write_text("one")
    first = key_of(key_parts(DIGEST, MACHINE, Options(trust=Trust(key))))
    key.write_text("two")
    assert key_of(key_parts(DIGEST, MACHINE, Options(trust=Trust(key)))) != first


def test_the_onnxruntime_build_is_read_without_importing_it() -> None:
    import subprocess
    import sys

    script = (
        "import sys\nfrom checker.store.key import onnxruntime_build\nb = onnxruntime_build()\n"
        "print(b['package'], b['version'], bool(b.get('build')), 'onnxruntime' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    import onnxruntime

    assert done.stdout.split() == ["onnxruntime", onnxruntime.__version__, "True", "False"]
    assert onnxruntime_build()["version"] == onnxruntime.__version__
