"""The REST client against a loopback GitHub: retries, rate limits, pagination, GHES, and the token."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest
import requests
from fakegithub import TOKEN, FakeGitHub

from checker.github.api import ApiError, Client
from checker.github.config import Secret

COMMENTS = "/repos/octo-org/octo-repo/issues/2/comments"


def test_every_page_is_read(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, "a" * 40)
    for i in range(250):
        github.add_comment(2, f"comment {i}", "someone")
    items = list(make_client(github).paginate(COMMENTS))
    assert [c["body"] for c in items] == [f"comment {i}" for i in range(250)]
    pages = github.requests("GET", COMMENTS)
    assert len(pages) == 3
    assert pages[0].query == {"per_page": "100"}
    assert pages[2].query["page"] == "3"


def test_a_502_is_retried_with_backoff(
    github: FakeGitHub, make_client: Callable[..., Client], sleeps: list[float]
) -> None:
    github.add_pull(2, "a" * 40)
    github.fail("GET", "/pulls/2$", status=502, body={"message": "Server Error"})
    pull = make_client(github).get("/repos/octo-org/octo-repo/pulls/2")
    assert pull["number"] == 2
    assert sleeps == [1.0]
    assert len(github.requests("GET", "/pulls/2$")) == 2


@pytest.mark.parametrize("status", [403, 429])
def test_the_secondary_rate_limit_waits_as_long_as_retry_after_says(
    status: int, github: FakeGitHub, make_client: Callable[..., Client], sleeps: list[float]
) -> None:
    github.add_pull(2, "a" * 40)
    limited = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}
    headers = {"retry-after": "37", "x-ratelimit-remaining": "4000", "x-ratelimit-reset": "9999999999"}
    github.fail("POST", "/comments$", status=status, body=limited, headers=headers)
    created = make_client(github).write("POST", COMMENTS, {"body": "hello"})
    assert created["body"] == "hello"
    assert sleeps == [37.0]


def test_the_primary_rate_limit_waits_until_the_reset(
    github: FakeGitHub, make_client: Callable[..., Client], sleeps: list[float]
) -> None:
    github.add_pull(2, "a" * 40)
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000042", "x-ratelimit-limit": "5000"}
    github.fail(
        "GET", "/pulls/2$", status=403, body={"message": "API rate limit exceeded for installation."}, headers=headers
    )
    client = make_client(github, clock=lambda: 1_000_000.0)
    assert client.get("/repos/octo-org/octo-repo/pulls/2")["number"] == 2
    assert sleeps == [43.0]


def test_a_reset_too_far_away_gives_up_at_once(
    github: FakeGitHub, make_client: Callable[..., Client], sleeps: list[float]
) -> None:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(1_000_000 + 3600)}
    github.fail("GET", "/pulls/2$", status=403, body={"message": "API rate limit exceeded"}, headers=headers)
    client = make_client(github, clock=lambda: 1_000_000.0)
    with pytest.raises(ApiError, match="rate limit") as caught:
        client.get("/repos/octo-org/octo-repo/pulls/2")
    assert caught.value.status == 403
    assert sleeps == []


def test_a_plain_403_is_final(github: FakeGitHub, make_client: Callable[..., Client], sleeps: list[float]) -> None:
    github.add_pull(2, "a" * 40)
    with pytest.raises(ApiError) as caught:
        make_client(github, token="ghs_fakeForkReadOnlyToken0123456789abcdef").write("POST", COMMENTS, {"body": "x"})
    assert caught.value.read_only
    assert caught.value.status == 403
    assert sleeps == []
    assert len(github.requests("POST")) == 1


def test_the_api_down_fails_after_the_retries(make_client: Callable[..., Client], sleeps: list[float]) -> None:
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = Client(requests.Session(), f"http://127.0.0.1:{port}", Secret(TOKEN), timeout=2, sleep=sleeps.append)
    with pytest.raises(ApiError, match="cannot connect") as caught:
        client.get("/user")
    assert caught.value.status is None
    assert sleeps == [1.0, 2.0, 4.0]


def test_an_api_that_hangs_times_out(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.fail("GET", "/pulls/2$", status=200, hang=1.5, times=2)
    client = make_client(github, timeout=0.2, attempts=2)
    with pytest.raises(ApiError, match=r"no answer within 0\.2 s"):
        client.get("/repos/octo-org/octo-repo/pulls/2")


def test_enterprise_server_paths_keep_the_api_prefix(ghes: FakeGitHub, make_client: Callable[..., Client]) -> None:
    ghes.add_pull(2, "b" * 40)
    for i in range(120):
        ghes.add_comment(2, f"c{i}", "someone")
    client = make_client(ghes)
    assert client.api_url.endswith("/api/v3")
    assert len(list(client.paginate(COMMENTS))) == 120
    assert all(s.path.startswith("/api/v3/repos/") for s in ghes.seen)


def test_a_next_page_on_another_host_is_not_followed(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, "a" * 40)
    github.fail(
        "GET", "/comments$", status=200, body=[], headers={"Link": '<https://elsewhere.example/x?page=2>; rel="next"'}
    )
    with pytest.raises(ApiError, match="refusing to follow"):
        list(make_client(github).paginate(COMMENTS))
    assert all("elsewhere" not in s.path for s in github.seen)


def test_the_token_is_sent_as_a_bearer_header_and_never_shown(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    github.fail("GET", "/pulls/7$", status=404, body={"message": f"Not Found {TOKEN}"})
    client = make_client(github)
    with pytest.raises(ApiError) as caught:
        client.get("/repos/octo-org/octo-repo/pulls/7")
    assert github.seen[0].headers["Authorization"] == f"Bearer {TOKEN}"
    for shown in (str(caught.value), repr(caught.value), caught.value.github_message, repr(client), str(client.token)):
        assert TOKEN not in shown
    assert "***" in str(caught.value)


def test_a_dry_run_sends_no_write(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    client = make_client(github, dry_run=True)
    assert client.write("POST", COMMENTS, {"body": "hi"}) is None
    assert github.requests("POST") == []
    described = client.planned[0].describe()
    assert described.startswith(f"POST {github.url}{COMMENTS}")
    assert "Bearer ***" in described and TOKEN not in described
    assert '"body": "hi"' in described


def test_path_parts_cannot_add_segments() -> None:
    assert Client.path("/repos/{owner}/{repo}", owner="a/../b", repo="c?d") == "/repos/a%2F..%2Fb/c%3Fd"


def test_all_calls_share_a_time_budget(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, "a" * 40)
    now = [0.0]
    client = make_client(github, budget=60.0, monotonic=lambda: now[0])
    client.get("/repos/octo-org/octo-repo/pulls/2")
    now[0] = 61.0
    with pytest.raises(ApiError, match="ran out"):
        client.get("/repos/octo-org/octo-repo/pulls/2")
    assert len(github.seen) == 1
