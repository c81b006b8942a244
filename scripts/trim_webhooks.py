"""Pick the event payloads the GitHub tests read from `@octokit/webhooks-examples`.

The package holds community-contributed webhook payloads, the same documents a runner writes to
GITHUB_EVENT_PATH. This keeps an example of each event the action handles (`EVENTS` in
checker/github/event.py) and drops the URL-template fields (`*_url` other than `url` and `html_url`) that
nothing reads, so the fixtures stay readable.

    python scripts/trim_webhooks.py                 # runs `npm pack @octokit/webhooks-examples@VERSION`
    python scripts/trim_webhooks.py path/to/package # an unpacked package (the folder holding api.github.com/)

Writes tests/fixtures/github/events/<event>.<action>.json (<event>.json for an event without actions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PACKAGE = "@octokit/webhooks-examples"
VERSION = "7.6.1"
# (event, index in the package's example list, fixture name): one or more per event of checker/github/event.py's
# EVENTS (tests/github/test_github_event.py holds the two together). pull_request_target delivers the
# pull_request payload, so its fixture is that example under its own name.
PICKS = (
    ("pull_request", 0, "pull_request.opened"),
    ("pull_request", 22, "pull_request.synchronize"),
    ("pull_request", 22, "pull_request_target.synchronize"),
    ("pull_request_review", 0, "pull_request_review.submitted"),
    ("pull_request_review_comment", 0, "pull_request_review_comment.created"),
    ("merge_group", 0, "merge_group.checks_requested"),
    ("push", 4, "push.branch"),
    ("push", 0, "push.tag"),
    ("workflow_run", 2, "workflow_run.completed"),
    ("workflow_dispatch", 0, "workflow_dispatch"),
    ("repository_dispatch", 0, "repository_dispatch.on-demand-test"),
    ("release", 0, "release.published"),
)
# A schedule run is no webhook, so the package has no example: its payload is the `schedule` (the cron line) with
# the repository and sender every payload carries, taken from the workflow_dispatch example.
SCHEDULE = ("workflow_dispatch", 0, "schedule", "30 5 * * 1")
KEEP_URLS = {"url", "html_url"}
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "github" / "events"


def strip_urls(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_urls(v) for k, v in node.items() if not (k.endswith("_url") and k not in KEEP_URLS)}
    if isinstance(node, list):
        return [strip_urls(item) for item in node]
    return node


def main() -> int:
    from npm_package import package_folder  # beside this script; imported here so tests can load trim()

    with package_folder(PACKAGE, VERSION, __doc__) as package:
        index = json.loads((package / "api.github.com" / "index.json").read_text(encoding="utf-8"))
        by_event = {entry["name"]: entry["examples"] for entry in index}
        OUT.mkdir(parents=True, exist_ok=True)
        payloads = {name: strip_urls(by_event[event][position]) for event, position, name in PICKS}
        event, position, name, cron = SCHEDULE
        common = by_event[event][position]
        payloads[name] = strip_urls({"schedule": cron, "repository": common["repository"], "sender": common["sender"]})
        for name, payload in payloads.items():
            path = OUT / f"{name}.json"
            path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
