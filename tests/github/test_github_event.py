"""Finding the pull request from real event payloads (@octokit/webhooks-examples)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fakegithub import FakeGitHub
from ghsupport import HEAD, load_event

from checker.errors import Error
from checker.github.api import Client
from checker.github.event import Event, Target, as_number, find_targets, head_sha
from checker.github.event import load_event as read_event

REPO = ("octo-org", "octo-repo")
PUSHED = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"  # `after` of the push fixture
RUN_HEAD = "3484a3fb816e0859fd6e1cea078d76385ff50625"  # `head_sha` of the workflow_run fixture


@pytest.mark.parametrize("name", ["pull_request", "pull_request_target"])
def test_a_pull_request_event_names_its_pull_and_head(
    name: str, github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    event = Event(name, load_event("pull_request.synchronize"))
    assert find_targets(make_client(github), REPO, event, "f" * 40, None) == [Target(2, HEAD)]
    assert github.seen == []  # no API call needed
    # GITHUB_SHA is the merge commit there: the head commit comes from the payload.
    assert head_sha(event, "f" * 40) == HEAD


def test_a_push_finds_the_commits_open_pull_requests(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(5, PUSHED)
    github.add_pull(6, PUSHED, state="closed")
    github.commit_pulls[PUSHED] = [5, 6]
    event = Event("push", load_event("push.branch"))
    assert find_targets(make_client(github), REPO, event, PUSHED, None) == [Target(5, PUSHED)]
    assert [s.path for s in github.seen] == [f"/repos/octo-org/octo-repo/commits/{PUSHED}/pulls"]


def test_a_tag_push_or_a_release_has_no_pull_request(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    client = make_client(github)
    assert find_targets(client, REPO, Event("release", load_event("release.published")), "a" * 40, None) == []
    deleted = load_event("push.tag")
    deleted["after"] = "0" * 40
    assert find_targets(client, REPO, Event("push", deleted), None, None) == []
    assert github.seen == []


def test_workflow_run_accepts_a_listed_pull_only_when_its_head_matches(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    payload = load_event("workflow_run.completed")  # lists pull request 2
    github.add_pull(2, RUN_HEAD)
    assert find_targets(make_client(github), REPO, Event("workflow_run", payload), None, None) == [Target(2, RUN_HEAD)]
    github.pulls[2]["head"]["sha"] = "9" * 40  # pushed to since that run: its result is about an older commit
    assert find_targets(make_client(github), REPO, Event("workflow_run", payload), None, None) == []


def test_workflow_run_from_a_fork_finds_the_pull_by_head_branch(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    payload = load_event("workflow_run.completed")
    run = payload["workflow_run"]
    run["pull_requests"] = []  # what GitHub sends for a fork
    run["head_repository"]["owner"]["login"] = "forker"
    run["head_branch"] = "new-model"
    github.add_pull(8, RUN_HEAD, head_owner="forker", branch="new-model")
    github.add_pull(9, RUN_HEAD, head_owner="someone-else", branch="new-model")
    found = find_targets(make_client(github), REPO, Event("workflow_run", payload), None, None)
    assert found == [Target(8, RUN_HEAD)]
    listed = github.requests("GET", "/pulls$")[0]
    assert listed.query == {"state": "open", "head": "forker:new-model", "per_page": "100"}


def test_workflow_run_never_takes_a_pull_request_from_the_report(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    payload = load_event("workflow_run.completed")
    payload["workflow_run"]["pull_requests"] = []
    del payload["workflow_run"]["head_repository"]
    github.add_pull(4, RUN_HEAD)  # open, at the run's head: but nothing in the event names it
    client = make_client(github)
    assert find_targets(client, REPO, Event("workflow_run", payload), None) == []
    for hostile in ("4/../../x", -4, True, 10**12, "1e3", "4"):
        assert as_number(hostile) == (4 if hostile == "4" else None)


def test_closed_pull_requests_and_tag_pushes_get_no_comment(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    client = make_client(github)
    closed = load_event("pull_request.synchronize")
    closed["pull_request"]["state"] = "closed"
    assert find_targets(client, REPO, Event("pull_request", closed), "f" * 40) == []
    tag = load_event("push.tag")
    github.add_pull(5, tag["after"])
    github.commit_pulls[tag["after"]] = [5]  # an open pull request whose head is the tagged commit
    assert find_targets(client, REPO, Event("push", tag), None) == []
    assert github.requests("GET", "/commits/") == []


def test_pr_number_names_the_pull_request_for_other_events(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    client = make_client(github)
    github.add_pull(7, "a" * 40)
    github.add_pull(8, "b" * 40, state="closed")
    dispatch = Event("workflow_dispatch", {})
    assert find_targets(client, REPO, dispatch, "a" * 40, 7) == [Target(7, "a" * 40)]
    assert find_targets(client, REPO, dispatch, "b" * 40, 8) == []
    assert find_targets(client, REPO, dispatch, "a" * 40) == []


def test_an_event_file_is_read_and_bounded(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text('{"number": 2, "pull_request": {"number": 2, "head": {"sha": "abc"}}}', encoding="utf-8")
    assert read_event("pull_request", path).payload["number"] == 2
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(Error, match="cannot read the event file"):
        read_event("pull_request", path)
    assert read_event(None, None) == Event("", {})
