"""The loopback GitHub itself: its OpenAPI check would catch a wrong request, and its fixture is complete."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from fakegithub import SPECS, OpenApi

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("plan", ["api.github.com", "ghes-3.19"])
@pytest.mark.parametrize(
    ("method", "path", "query", "body", "problem"),
    [
        ("GET", "/repos/o/r/issues/2/reactions", {}, b"", "no such operation"),
        ("PUT", "/repos/o/r/issues/comments/5", {}, b'{"body": "x"}', "no such operation"),
        ("POST", "/repos/o/r/issues/2/comments", {}, b'{"text": "x"}', "'body' is a required property"),
        ("POST", "/repos/o/r/issues/2/comments", {}, b"", "no body"),
        ("GET", "/repos/o/r/issues/two/comments", {}, b"", "is not of type 'integer'"),
        ("GET", "/repos/o/r/issues/2/comments", {"per_page": "500"}, b"", "maximum of 100"),
        ("GET", "/repos/o/r/issues/2/comments", {"perpage": "100"}, b"", "unknown query parameter perpage"),
        ("GET", "/repos/o/r/pulls", {"state": "merged"}, b"", "'merged' is not one of"),
        ("DELETE", "/repos/o/r/issues/comments/5", {}, b'{"body": "x"}', "a body where the operation takes none"),
    ],
)
def test_a_request_github_would_refuse_is_caught(
    plan: str, method: str, path: str, query: dict[str, str], body: bytes, problem: str
) -> None:
    problems = OpenApi(plan).check_request(method, path, query, body, "application/json")
    assert any(problem in p for p in problems), problems


def test_the_requests_the_client_sends_pass() -> None:
    api = OpenApi()
    assert api.check_request("GET", "/repos/o/r/issues/2/comments", {"per_page": "100", "page": "2"}, b"", "") == []
    assert api.check_request("PATCH", "/repos/o/r/issues/comments/9", {}, b'{"body": "x"}', "application/json") == []
    assert api.check_request("GET", "/repos/o/r/commits/abc123/pulls", {"per_page": "100"}, b"", "") == []
    assert api.check_request("GET", "/user", {}, b"", "") == []


def test_a_response_the_api_would_not_give_is_caught() -> None:
    api = OpenApi()
    assert api.check_response("GET", "/repos/o/r/pulls/2", 200, {"number": 2})
    assert "GitHub never answers 418" in api.check_response("GET", "/repos/o/r/pulls/2", 418, None)[0]


def test_the_trimmed_description_holds_everything_it_references() -> None:
    spec = importlib.util.spec_from_file_location("trim_openapi", ROOT / "scripts" / "trim_openapi.py")
    assert spec is not None and spec.loader is not None
    trim_openapi = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trim_openapi)
    for plan in trim_openapi.PLANS:
        trimmed = json.loads((SPECS / f"{plan}.json").read_text(encoding="utf-8"))
        again = trim_openapi.trim(trimmed)  # raises KeyError if a $ref points outside the fixture
        assert again["paths"] == trimmed["paths"]
        assert again["components"] == trimmed["components"]
