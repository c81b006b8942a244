"""Config: built once from the environment, the token never shown."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

from checker.errors import UsageError
from checker.github.config import Config, Secret

TOKEN = "ghp_neverShowMe0123456789"


def test_the_environment_and_the_inputs_fill_the_config() -> None:
    env = {
        "GITHUB_API_URL": "https://ghe.example.com/api/v3/",
        "GITHUB_REPOSITORY": "octo-org/octo-repo",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": "/tmp/event.json",
        "GITHUB_RUN_ID": "77",
        "GITHUB_RUN_ATTEMPT": "3",
        "INPUT_GITHUB_TOKEN": TOKEN,
        "INPUT_BUNDLES": "a b\nc",
        "INPUT_FAIL_ON": "warning",
        "INPUT_MODE": "",  # an input left empty keeps its default
    }
    config = Config.from_env(env, comment="never", mode=None)
    assert config.api_url == "https://ghe.example.com/api/v3"
    assert config.owner_repo == ("octo-org", "octo-repo")
    assert config.event_path == Path("/tmp/event.json")
    assert config.run == (77, 3)
    assert (config.bundles, config.fail_on, config.mode, config.comment) == ("a b\nc", "warning", "verify", "never")
    assert config.token is not None and config.token.reveal() == TOKEN


def test_the_token_never_shows() -> None:
    config = Config.from_env({"GITHUB_TOKEN": TOKEN})
    secret = config.token
    assert secret is not None
    for shown in (repr(config), str(config), repr(secret), str(secret), f"{secret}", f"{secret!r}", str([secret])):
        assert TOKEN not in shown
    assert TOKEN not in repr(copy.copy(config))
    with pytest.raises(TypeError):
        pickle.dumps(secret)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"INPUT_MODE": "publish"}, "mode must be one of verify, verify-only, comment-only"),
        ({"INPUT_COMMENT": "sometimes"}, "comment must be one of"),
        ({"INPUT_FAIL_ON": "warnings"}, "fail-on must be one of error, warning, never"),
        ({"GITHUB_REPOSITORY": "no-slash"}, "OWNER/NAME"),
        ({"CHECKER_GITHUB_TIMEOUT": "soon"}, "number of seconds"),
    ],
)
def test_a_bad_input_is_a_usage_error(env: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        Config.from_env(env)


def test_no_repository_is_a_usage_error_when_one_is_needed() -> None:
    with pytest.raises(UsageError, match="GITHUB_REPOSITORY"):
        _ = Config().owner_repo


def test_a_secret_formats_as_stars() -> None:
    assert f"{Secret('x'):>10}" == "***"
