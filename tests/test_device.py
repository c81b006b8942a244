"""The README's "On the device" section, end to end: a wheel built with `pip wheel`, a packed and signed archive
copied to a fresh folder, verified by a fresh venv that is not on PATH, with --require-signature and
--run-validation (the example's `checker verify bundle.yaml` runs with that venv's checker)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

import pytest
from bundlekit import REPO, build_wheel
from signkit import key_pair

pytest.importorskip("model_signing")

Cli = Callable[..., tuple[int, str, str]]


@pytest.mark.slow
@pytest.mark.xdist_group("wheel")
def test_the_readme_device_flow(cli: Cli, example: Path, tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pip wheel --no-deps -w dist ." in readme and "--require-signature --trusted-key release.pub" in readme
    wheel = build_wheel(tmp_path / "dist")
    device = tmp_path / "device"
    env_dir = device / "opt-checker"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    install = [sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install", "-q"]
    subprocess.run(
        [*install, "--disable-pip-version-check", "-c", REPO / "constraints.txt", f"{wheel}[sign]"], check=True
    )

    keys = key_pair(tmp_path / "keys")
    code, _, err = cli("sign", example, "--key", keys.private)
    assert code == 0, err
    archive = tmp_path / "mobilenet-tiny-1.0.0.tar.gz"
    code, _, err = cli("pack", example, "-o", archive)
    assert code == 0, err
    shutil.copy(archive, device / archive.name)
    shutil.copy(keys.public, device / "release.pub")

    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/bin:/bin"  # neither this venv nor the device's is on PATH
    args = ["verify", archive.name, "--require-signature", "--trusted-key", "release.pub", "--run-validation"]
    done = subprocess.run(
        [env_dir / "bin" / "checker", *args, "--format", "json"],
        cwd=device, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    bundle = json.loads(done.stdout)["bundles"][0]
    assert bundle["validation"]["exit_code"] == 0 and bundle["validation"]["started"] is True
    assert not [f for f in bundle["findings"] if f["id"].startswith("signature.")]

    (device / "other.pub").write_bytes(key_pair(tmp_path / "other", "other").public.read_bytes())
    args[4] = "other.pub"
    refused = subprocess.run(
        [env_dir / "bin" / "checker", *args, "--format", "json"],
        cwd=device, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    found = json.loads(refused.stdout)["bundles"][0]["findings"]
    assert "signature.untrusted" in [f["id"] for f in found]
