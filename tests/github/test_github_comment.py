"""The sticky comment against a loopback GitHub: found by marker and login, kept current, never stale."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakegithub import BOT, PAT, FakeGitHub
from ghsupport import HEAD, sample_report

from checker.github.api import ApiError, Client
from checker.github.comment import Sticky, header, marker
from checker.github.event import Target
from checker.render.markdown import COMMENT_LIMIT, HEADER_RESERVE, render

REPO = ("octo-org", "octo-repo")
SET = "models/*/bundle.yaml"


def sticky(client: Client, run: tuple[int, int] = (100, 1), bundle_set: str = SET) -> Sticky:
    return Sticky(client, REPO, bundle_set, run)


def test_created_once_then_updated_in_place(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, HEAD)
    first = sticky(make_client(github)).sync(Target(2, HEAD), "## first", create=True)
    assert first.action == "created"
    assert first.url and first.url.endswith(f"#issuecomment-{github.ours(2)[0]['id']}")
    second = sticky(make_client(github), run=(101, 1)).sync(Target(2, HEAD), "## second", create=True)
    assert second.action == "updated"
    ours = github.ours(2)
    assert len(ours) == 1
    assert ours[0]["body"].startswith(marker(SET) + "\n")
    assert ours[0]["body"].endswith("## second")
    assert len(github.requests("POST")) == 1 and len(github.requests("PATCH")) == 1


def test_an_unchanged_body_is_not_sent_again(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, HEAD)
    sticky(make_client(github)).sync(Target(2, HEAD), "## same", create=True)
    again = sticky(make_client(github), run=(101, 1)).sync(Target(2, HEAD), "## same", create=True)
    assert again.action == "unchanged"
    assert github.requests("PATCH") == []


def test_ours_is_found_on_page_two_among_150_others(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, HEAD)
    github.add_comment(2, "looks good", "octocat")
    body = header(SET, HEAD, (99, 1)) + "## old"
    for i in range(150):
        github.add_comment(2, f"comment {i}", "reviewer")
    github.add_comment(2, body, BOT)
    outcome = sticky(make_client(github)).sync(Target(2, HEAD), "## new", create=True)
    assert outcome.action == "updated"
    assert github.requests("POST") == []
    assert len(github.requests("GET", "/issues/2/comments$")) == 2
    assert github.ours(2)[0]["body"].endswith("## new")


def test_another_authors_comment_with_our_marker_is_never_taken_over(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    github.add_pull(2, HEAD)
    forged = github.add_comment(2, header(SET, HEAD, (1, 1)) + "## planted by someone", "mallory")
    outcome = sticky(make_client(github)).sync(Target(2, HEAD), "## ours", create=True)
    assert outcome.action == "created"
    assert forged["body"].endswith("planted by someone")
    assert github.requests("PATCH") == [] and github.requests("DELETE") == []


def test_another_comment_key_gets_its_own_comment(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, HEAD)
    sticky(make_client(github), bundle_set="ci\nimages").sync(Target(2, HEAD), "## a", create=True)
    sticky(make_client(github), bundle_set="ci\ntexts").sync(Target(2, HEAD), "## b", create=True)
    assert sorted(c["body"][-4:] for c in github.ours(2)) == ["## a", "## b"]
    assert marker("ci  images") == marker("ci\nimages")


def test_the_token_owners_login_is_used_when_the_token_may_read_it(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    github.add_pull(2, HEAD)
    github.add_comment(2, header(SET, HEAD, (1, 1)) + "## by the actions bot", BOT)
    outcome = sticky(make_client(github, token=PAT)).sync(Target(2, HEAD), "## by release-bot", create=True)
    assert outcome.action == "created"
    assert [c["body"].endswith("## by release-bot") for c in github.ours(2, "release-bot")] == [True]
    assert len(github.ours(2, BOT)) == 1


def test_duplicates_from_concurrent_runs_are_removed(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, HEAD)
    oldest = github.add_comment(2, header(SET, HEAD, (98, 1)) + "## run 98", BOT)
    github.add_comment(2, header(SET, HEAD, (99, 1)) + "## run 99", BOT)
    outcome = sticky(make_client(github)).sync(Target(2, HEAD), "## run 100", create=True)
    assert outcome.action == "updated"
    assert [c["id"] for c in github.ours(2)] == [oldest["id"]]
    assert github.ours(2)[0]["body"].endswith("## run 100")


def test_a_race_between_two_creating_runs_leaves_one_comment(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    github.add_pull(2, HEAD)
    # Another run of the same commit creates its comment between our listing and our POST.
    github.before(
        "POST", "/issues/2/comments$", lambda: github.add_comment(2, header(SET, HEAD, (100, 1)) + "## other", BOT)
    )
    outcome = sticky(make_client(github), run=(100, 2)).sync(Target(2, HEAD), "## this run", create=True)
    assert outcome.action == "created"
    assert len(github.ours(2)) == 1
    assert github.ours(2)[0]["body"].endswith("## this run")
    assert len(github.requests("DELETE")) == 1


def test_an_older_commits_run_never_overwrites_a_newer_result(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    newer = "9" * 40
    github.add_pull(2, newer)
    github.add_comment(2, header(SET, newer, (120, 1)) + "## the newer commit", BOT)
    outcome = sticky(make_client(github), run=(130, 1)).sync(Target(2, HEAD), "## an older commit", create=True)
    assert outcome.action == "skipped"
    assert "out of date" in outcome.why
    assert github.ours(2)[0]["body"].endswith("## the newer commit")
    assert github.requests("PATCH") == [] and github.requests("POST") == []


def test_a_later_run_of_the_same_commit_is_not_overwritten_by_an_earlier_one(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    github.add_pull(2, HEAD)
    github.add_comment(2, header(SET, HEAD, (120, 2)) + "## re-run", BOT)
    outcome = sticky(make_client(github), run=(120, 1)).sync(Target(2, HEAD), "## first attempt", create=True)
    assert outcome.action == "skipped"
    assert github.ours(2)[0]["body"].endswith("## re-run")


def test_on_failure_updates_but_does_not_create(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, HEAD)
    skipped = sticky(make_client(github)).sync(Target(2, HEAD), "## pass", create=False)
    assert skipped.action == "skipped" and github.ours(2) == []
    github.add_comment(2, header(SET, HEAD, (90, 1)) + "## fail", BOT)
    updated = sticky(make_client(github)).sync(Target(2, HEAD), "## pass now", create=False)
    assert updated.action == "updated"
    assert github.ours(2)[0]["body"].endswith("## pass now")


def test_a_fork_token_gets_githubs_403(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, HEAD)
    client = make_client(github, token="ghs_fakeForkReadOnlyToken0123456789abcdef")
    with pytest.raises(ApiError) as caught:
        sticky(client).sync(Target(2, HEAD), "## x", create=True)
    assert caught.value.read_only
    assert github.ours(2) == []


def test_a_report_too_large_for_a_comment_is_shortened_and_accepted(
    github: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    github.add_pull(2, HEAD)
    report = sample_report(findings=3000)
    markdown = render(report)
    assert len(markdown) < COMMENT_LIMIT < len(render(report, limit=10**8))
    outcome = sticky(make_client(github)).sync(Target(2, HEAD), markdown, create=True)
    assert outcome.action == "created"  # the fake answers 422 to a body over 65,536 characters, as GitHub does
    body = github.ours(2)[0]["body"]
    assert len(body) <= COMMENT_LIMIT
    assert len(header(SET, "f" * 64, (2**63, 2**31))) < HEADER_RESERVE  # the room the renderer leaves
    assert "Shortened to fit" in body and "The JSON report has them all" in body


def test_a_dry_run_reads_but_only_plans_its_writes(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, HEAD)
    client = make_client(github, dry_run=True)
    outcome = sticky(client).sync(Target(2, HEAD), "## planned", create=True)
    assert outcome.action == "planned"
    assert github.ours(2) == [] and github.requests("POST") == []
    assert client.planned[0].method == "POST"
    assert client.planned[0].body is not None and client.planned[0].body["body"].endswith("## planned")


def test_enterprise_server_keeps_the_comment_under_its_api_prefix(
    ghes: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    ghes.add_pull(2, HEAD)
    for i in range(130):
        ghes.add_comment(2, f"comment {i}", "reviewer")
    sticky(make_client(ghes)).sync(Target(2, HEAD), "## first", create=True)
    sticky(make_client(ghes), run=(101, 1)).sync(Target(2, HEAD), "## second", create=True)
    assert [c["body"].endswith("## second") for c in ghes.ours(2)] == [True]
    assert all(s.path.startswith("/api/v3/") for s in ghes.seen)


def test_minimize_old_on_enterprise_server_uses_its_graphql_endpoint(
    ghes: FakeGitHub, make_client: Callable[..., Client]
) -> None:
    ghes.add_pull(2, HEAD)
    graphql = ghes.url.removesuffix("/v3") + "/graphql"
    first = Sticky(make_client(ghes), REPO, SET, (100, 1), "minimize-old", graphql)
    first.sync(Target(2, HEAD), "## first", create=True)
    old = ghes.ours(2)[0]
    second = Sticky(make_client(ghes), REPO, SET, (101, 1), "minimize-old", graphql)
    assert second.sync(Target(2, HEAD), "## second", create=True).action == "created"
    assert ghes.minimized == {old["node_id"]: "OUTDATED"}
    assert [s.path for s in ghes.seen if s.path.endswith("graphql")] == ["/api/graphql"]
