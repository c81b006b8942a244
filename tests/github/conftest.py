from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from actionrunner import Runner
from fakegithub import TOKEN, FakeGitHub
from ghsupport import HEAD, load_event, make_bundle
from pytest_httpserver import HTTPServer

from checker.github.api import Client
from checker.github.config import Secret


@pytest.fixture(scope="session")
def _server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", threaded=True)
    server.start()
    yield server
    server.stop()


def _serve(server: HTTPServer, plan: str, prefix: str) -> Iterator[FakeGitHub]:
    server.clear()
    fake = FakeGitHub(server, plan, prefix)
    yield fake
    server.clear()
    assert fake.violations == [], "requests GitHub's REST description does not allow:\n" + "\n".join(fake.violations)


@pytest.fixture
def github(_server: HTTPServer) -> Iterator[FakeGitHub]:
    """GitHub's REST API on loopback; the test fails if any request breaks GitHub's OpenAPI description."""
    yield from _serve(_server, "api.github.com", "")


@pytest.fixture
def ghes(_server: HTTPServer) -> Iterator[FakeGitHub]:
    """GitHub Enterprise Server: the API under /api/v3, checked against the GHES description."""
    yield from _serve(_server, "ghes-3.19", "/api/v3")


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def make_client(sleeps: list[float]) -> Iterator[Callable[..., Client]]:
    sessions: list[requests.Session] = []

    def make(fake: FakeGitHub, token: str | None = TOKEN, **kwargs: Any) -> Client:
        session = requests.Session()
        sessions.append(session)
        kwargs.setdefault("timeout", 5.0)
        return Client(session, fake.url, Secret(token) if token else None, sleep=sleeps.append, **kwargs)

    yield make
    for session in sessions:
        session.close()


@pytest.fixture
def event_file(tmp_path: Path) -> Callable[..., Path]:
    def write(name: str, **changes: Any) -> Path:
        payload = load_event(name)
        for dotted, value in changes.items():
            node = payload
            *parents, last = dotted.split("__")
            for key in parents:
                node = node[key]
            node[last] = value
        path = tmp_path / f"event-{name}.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        return path

    return write


@pytest.fixture
def runner(tmp_path: Path, github: FakeGitHub, event_file: Callable[..., Path]) -> Runner:
    """action.yml's steps for pull request #2 (head HEAD), with a passing and a failing bundle in the workspace."""
    github.add_pull(2, HEAD)
    runner = Runner(tmp_path, github, event_file("pull_request.synchronize"))
    make_bundle(runner.workspace / "models" / "good", name="good-model")
    make_bundle(runner.workspace / "models" / "bad", name="bad-model", complete=False)
    return runner
