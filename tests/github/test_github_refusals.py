"""Each cause GitHub states for a refused call, matched as that cause: one documented message per cause,
answered by a loopback GitHub; each status GitHub's REST description lists for the calls that write a comment;
and the advice the action gives."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from fakegithub import FakeGitHub

from checker.github.api import ApiError, Client
from checker.github.publish import advice
from checker.github.refusals import CAUSES, cause_of, rate_limited

DESCRIPTION = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "openapi" / "api.github.com.json"
COMMENTS = "/repos/octo-org/octo-repo/issues/2/comments"
SSO_HEADER = "required; url=https://github.com/orgs/octo-org/sso?authorization_request=AZ09"

# (status, GitHub's message as its documentation or its answers word it, the cause, words the advice must hold)
MESSAGES = [
    (403, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
     "secondary_rate_limit", "run the job again later"),
    (403, "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. "
     "Please retry your request again later.", "secondary_rate_limit", "run the job again later"),
    (403, "You have triggered an abuse detection mechanism and have been temporarily blocked from content "
     "creation. Please retry your request again later.", "secondary_rate_limit", "run the job again later"),
    (429, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
     "secondary_rate_limit", "run the job again later"),
    (403, "API rate limit exceeded for installation ID 123456.", "rate_limit", "run the job again later"),
    (403, "API rate limit exceeded for 203.0.113.7. (But here's the good news: Authenticated requests get a higher "
     "rate limit. Check out the documentation for more details.)", "rate_limit", "run the job again later"),
    (403, "Rate Limit Exceeded: abuse", "rate_limit", "run the job again later"),
    (429, "Too Many Requests", "rate_limit", "run the job again later"),
    (403, "Unable to create comment because issue is locked.", "locked", "Unlock it"),
    (403, "Repository was archived so is read-only.", "archived", "Unarchive it"),
    (403, "Although you appear to have the correct authorization credentials, the `octo-org` organization has an "
     "IP allow list enabled, and your IP address is not permitted to access this resource.", "ip_allow_list",
     "allow list"),
    (403, "Resource not accessible by integration", "read_only", "mode: verify-only"),
    (403, "Resource not accessible by personal access token", "read_only", "mode: verify-only"),
    (410, "Issues are disabled for this repo", "gone", "disabled"),
    (422, "Validation Failed: body is too long (maximum is 65536 characters)", "too_long", "too long"),
    (422, "Validation Failed", "refused", "as spam"),
    (401, "Bad credentials", "bad_credentials", "github-token input"),
    (403, "Must have admin rights to Repository.", "no_permission", "lacks a permission"),
    (404, "Not Found", "no_permission", "lacks a permission"),
    (502, "Server Error", "down", "not answering"),
    (None, "", "down", "not answering"),
]  # fmt: skip


IDS = [f"{m[2]}-{i}" for i, m in enumerate(MESSAGES)]


@pytest.mark.parametrize(("status", "message", "name", "words"), MESSAGES, ids=IDS)
def test_each_message_is_its_own_cause(
    status: int | None,
    message: str,
    name: str,
    words: str,
    github: FakeGitHub,
    make_client: Callable[..., Client],
    sleeps: list[float],
) -> None:
    """GitHub's answer on loopback, through the client's retries, to the cause and the advice the action gives."""
    github.add_pull(2, "a" * 40)
    if status is None:
        with socket.socket() as s:  # a port that nothing listens on: no answer at all
            s.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{s.getsockname()[1]}"
        client = Client(requests.Session(), url, None, sleep=sleeps.append, timeout=1.0)
    else:
        github.fail("POST", "/comments$", status=status, body={"message": message}, times=10)
        client = make_client(github)
    with pytest.raises(ApiError) as caught:
        client.write("POST", COMMENTS, {"body": "hello"})
    assert caught.value.status == status
    assert caught.value.cause == name
    said = advice(caught.value)
    assert words.lower() in said.lower()
    assert said.count("The verdict is unchanged") <= 1
    if name.endswith("rate_limit"):
        assert sleeps, "a rate limit is waited for before the advice is given"
    elif status is not None and status < 500:
        assert sleeps == [], "a refusal that waiting does not change is final"


def test_a_422s_reason_is_read_from_its_errors(github: FakeGitHub, make_client: Callable[..., Client]) -> None:
    github.add_pull(2, "a" * 40)
    body = {"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "custom",
                                                        "field": "body", "message": "body is too long"}]}  # fmt: skip
    github.fail("POST", "/comments$", status=422, body=body)
    with pytest.raises(ApiError) as caught:
        make_client(github).write("POST", COMMENTS, {"body": "hello"})
    assert caught.value.cause == "too_long"
    assert "body is too long" in advice(caught.value)


def test_a_rate_limit_is_never_called_a_lock_nor_a_missing_permission() -> None:
    for status, message, name, _ in MESSAGES:
        said = advice(ApiError(message, status, message))
        if "rate_limit" in name:
            assert "conversation is locked" not in said and "Unlock" not in said
            assert "lacks a permission" not in said and "rate limit" in said
            assert rate_limited(status or 0, message)
        elif name == "locked":
            assert "conversation is locked" in said and "rate limit" not in said
            assert not rate_limited(status or 0, message)


def test_the_sso_header_names_the_cause_whatever_the_message() -> None:
    message = "Resource protected by organization SAML enforcement. You must grant your Personal Access token access."
    for status in (401, 403, 404):
        assert cause_of(status, message, SSO_HEADER).name == "sso"
        assert "SAML single sign-on" in advice(ApiError(message, status, message, SSO_HEADER))
    assert cause_of(403, message).name == "no_permission"  # without GitHub's header it is not SSO


def _write_operations() -> dict[str, set[int]]:
    """Every status GitHub's REST description lists for the calls that write or edit a comment."""
    spec = json.loads(DESCRIPTION.read_text(encoding="utf-8"))
    out: dict[str, set[int]] = {}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if method in ("post", "patch") and "comments" in path:
                out[f"{method.upper()} {path}"] = {int(s) for s in operation["responses"] if int(s) >= 400}
    return out


def test_every_refusal_the_description_lists_for_a_comment_write_has_a_cause() -> None:
    operations = _write_operations()
    assert operations and any(statuses for statuses in operations.values())
    for operation, statuses in operations.items():
        for status in statuses:
            named = [c.name for c in CAUSES if status in c.statuses]
            assert named, f"{operation}: GitHub lists {status}, which no cause names"
            assert cause_of(status, "").name != "other", (operation, status)


def test_every_cause_has_a_message_here() -> None:
    tested = {name for _, _, name, _ in MESSAGES} | {"sso"}
    assert {c.name for c in CAUSES} <= tested
