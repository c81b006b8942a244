"""Shared fixtures: the example bundle copied per test, the CLI run in-process, and no network but loopback."""

from __future__ import annotations

import ipaddress
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundlekit import EXAMPLE


def _loopback_only(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host != "localhost":
            try:
                if not ipaddress.ip_address(host).is_loopback:
                    raise OSError(f"tests may not reach {host}: only loopback is allowed")
            except ValueError as exc:
                raise OSError(f"tests may not resolve {host}: only loopback is allowed") from exc
        return original(self, address)

    return connect


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only(socket.socket.connect))


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A private copy of the example bundle."""
    dest = tmp_path / "mobilenet-tiny"
    shutil.copytree(EXAMPLE, dest)
    return dest


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run `checker ARGS...` in-process: (exit status, stdout, stderr)."""
    from checker.cli import main

    def run(*args: str | Path) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fail-on-skip",
        action="store_true",
        help="count a skipped test as failed (for a CI step whose tests must all run, e.g. with an optional extra)",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """With --fail-on-skip, a test that skips (e.g. an optional library that did not install) fails instead."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and item.config.getoption("--fail-on-skip") and not hasattr(report, "wasxfail"):
        where = report.longrepr  # (path, line, reason) for a skip
        reason = f"{where[0]}:{where[1]}: {where[2]}" if isinstance(where, tuple) else str(where)
        report.outcome = "failed"
        report.longrepr = f"--fail-on-skip: the test skipped ({reason})"
