"""Finding the pull request and the commits from real event payloads (@octokit/webhooks-examples), and the
table of events held to a payload fixture per event, the script that makes them, the docs and action.yml."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from fakegithub import FakeGitHub
from ghsupport import FIXTURES, HEAD, load_event

from checker.errors import Error
from checker.github.api import Client
from checker.github.commit import verified_commit
from checker.github.config import Config
from checker.github.event import EVENTS, NO_COMMIT, Event, Kind, Target, as_number, base_commit, find_targets, head_sha
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


# ----- the table of events, held to what must follow it

ROOT = FIXTURES.parents[2]
PAYLOADS = sorted((FIXTURES / "events").glob("*.json"))


def trim_webhooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trim_webhooks", ROOT / "scripts" / "trim_webhooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def event_of(path: Path) -> str:
    return path.name.split(".")[0]


def event_gaps(events: Mapping[str, Kind], payloads: list[Path]) -> list[str]:
    """Where the table of events and what follows it disagree: each event's payload fixture and the script
    entry that makes it, its words in docs/action.md, and the events action.yml's cache steps leave out."""
    fixtures = {event_of(path) for path in payloads}
    script = trim_webhooks()
    made = {name.split(".")[0] for *_, name in script.PICKS} | {script.SCHEDULE[2]}
    docs = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    gaps = [f"{name}: no payload fixture" for name in events if name not in fixtures]
    gaps += [f"{name}: a payload fixture, but not in the table" for name in sorted(fixtures - set(events))]
    gaps += [f"{name}: scripts/trim_webhooks.py makes no fixture" for name in events if name not in made]
    gaps += [f"{name}: not in docs/action.md" for name in events if f"`{name}`" not in docs]
    action = (ROOT / "action.yml").read_text(encoding="utf-8")
    for condition in re.findall(r"if: (.*cache.*|.*event_name.*)", action):
        uncached = set(re.findall(r"github\.event_name != '(\w+)'", condition))
        if uncached and uncached != {name for name, kind in events.items() if not kind.cache}:
            gaps.append(f"action.yml's condition `{condition}` leaves out other events than the table's")
    return gaps


def test_every_event_has_its_payload_fixture_words_and_cache_rule() -> None:
    assert event_gaps(EVENTS, PAYLOADS) == []
    assert re.findall(r"github\.event_name != '(\w+)'", (ROOT / "action.yml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("left_out", ["merge_group", "pull_request_review", "release"])
def test_an_event_missing_from_a_table_is_reported(left_out: str) -> None:
    table = {name: kind for name, kind in EVENTS.items() if name != left_out}
    gaps = event_gaps(table, PAYLOADS)
    assert f"{left_out}: a payload fixture, but not in the table" in gaps
    assert any("action.yml" in gap for gap in gaps) == (not EVENTS[left_out].cache)
    fixtures = [path for path in PAYLOADS if event_of(path) != left_out]
    assert event_gaps(EVENTS, fixtures) == [f"{left_out}: no payload fixture"]


def dig(payload: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = payload
    for key in path:
        node = node[key]
    return node


@pytest.mark.parametrize("path", PAYLOADS, ids=lambda p: p.stem)
def test_each_events_payload_names_its_commits_and_pull_request(
    path: Path, github: FakeGitHub, make_client: Callable[..., Client], tmp_path: Path
) -> None:
    payload = json.loads(path.read_text(encoding="utf-8"))
    event = Event(event_of(path), payload)
    kind = event.kind
    assert kind is EVENTS[event.name]
    sha = "f" * 40  # GITHUB_SHA
    named = dig(payload, kind.head) if kind.head else None
    assert named is None or re.fullmatch("[0-9a-f]{40}", named)  # the fixture holds what the table says
    head = named if named and named != NO_COMMIT else (sha if kind.head_or_sha else None)
    assert head_sha(event, sha) == head
    assert base_commit(event) == (dig(payload, kind.base) if kind.base else None)

    git = tmp_path / ".git"
    git.mkdir()
    (git / "HEAD").write_text("c" * 40 + "\n", encoding="utf-8")
    checked = verified_commit(Config(workspace=tmp_path, sha=sha), event)
    assert checked == (head_sha(event, sha) if kind.checkout == "head" else "c" * 40)

    expected: list[Target] = []
    if kind.pulls == "payload":
        expected = [Target(payload["pull_request"]["number"], head)]
    elif kind.pulls == "run":
        for number in [pull["number"] for pull in payload["workflow_run"]["pull_requests"]]:
            github.add_pull(number, str(head))
            expected.append(Target(number, head))
    elif kind.pulls == "commit" and payload["ref"].startswith("refs/heads/"):
        github.add_pull(5, str(head))
        github.commit_pulls[str(head)] = [5]
        expected = [Target(5, head)]
    assert find_targets(make_client(github), REPO, event, sha, None) == expected
    if not kind.pulls:
        assert github.seen == []
