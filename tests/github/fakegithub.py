"""A stand-in for GitHub's REST API on a loopback port, strict about what it is sent.

Every request is checked against GitHub's own OpenAPI description (the trimmed fixture made by
scripts/trim_openapi.py): the operation must exist, its path and query parameters must match their
schemas, and a JSON body must match the operation's request schema. Every JSON answer the fake gives
is checked against the response schema too, so the fake cannot drift from the real API. Problems
are collected in `violations`; the fixture that owns the fake fails the test if any were found.

It keeps comments and pull requests in memory, paginates as GitHub does (Link headers), answers a
read-only token with GitHub's 403, and can be told to fail: any status, rate-limit headers, or no
answer for a while.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jsonschema import Draft4Validator
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

SPECS = Path(__file__).resolve().parent.parent / "fixtures" / "github" / "openapi"
TOKEN = "ghs_fakeInstallationToken0123456789abcdef"  # a workflow's GITHUB_TOKEN: /user answers 403
PAT = "github_pat_fakePersonalToken0123456789abcdef"  # a person's token: /user answers their login
READ_ONLY = "ghs_fakeForkReadOnlyToken0123456789abcdef"  # a fork's pull_request token
APP = "ghs_fakeAppInstallationToken0123456789abcd"  # a GitHub App's installation token: /user answers 403
BOT = "github-actions[bot]"
APP_BOT = "octo-release-app[bot]"
# GitHub's GraphQL mutations the action sends, with the variables each takes (from GitHub's public schema).
MUTATIONS = {"minimizeComment": {"id", "why"}, "unminimizeComment": {"id"}}
CLASSIFIERS = {"SPAM", "ABUSE", "OFF_TOPIC", "OUTDATED", "DUPLICATE", "RESOLVED"}
COMMENT_LIMIT = 65536


# ----- GitHub's OpenAPI description


def _nullable(node: Any) -> Any:
    """OpenAPI 3.0 `nullable: true` as plain JSON Schema (draft 4, which OpenAPI 3.0 is built on)."""
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable(v) for k, v in node.items() if k != "nullable"}
    if not node.get("nullable"):
        return out
    if isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [out, {"type": "null"}]}


class OpenApi:
    def __init__(self, plan: str = "api.github.com") -> None:
        self.spec = json.loads((SPECS / f"{plan}.json").read_text(encoding="utf-8"))
        self.components = _nullable(self.spec["components"])
        self.routes = []
        for template, item in self.spec["paths"].items():
            pattern = re.compile("^" + re.sub(r"\{[^/]+\}", "([^/]+)", template) + "$")
            names = re.findall(r"\{([^/]+)\}", template)
            for method, op in item.items():
                if method != "parameters":
                    self.routes.append((method.upper(), pattern, names, template, op, item.get("parameters", [])))

    def resolve(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            target: Any = self.spec
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            node = target
        return node

    def example(self, name: str) -> Any:
        return copy.deepcopy(self.spec["components"]["examples"][name]["value"])

    def validate(self, schema: Any, value: Any) -> list[str]:
        root = {**_nullable(schema), "components": self.components}
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in Draft4Validator(root).iter_errors(value)]

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any], dict[str, str], list[Any]] | None:
        for m, pattern, names, template, op, shared in self.routes:
            found = pattern.match(path)
            if m == method and found:
                return template, op, dict(zip(names, found.groups(), strict=True)), shared
        return None

    def check_request(self, method: str, path: str, query: dict[str, str], body: bytes, ctype: str) -> list[str]:
        found = self.operation(method, path)
        if found is None:
            return [f"{method} {path}: no such operation in GitHub's REST description"]
        template, op, path_values, shared = found
        problems: list[str] = []
        params = [self.resolve(p) for p in [*shared, *op.get("parameters", [])]]
        for p in params:
            values = path_values if p["in"] == "path" else query if p["in"] == "query" else {}
            if p["name"] not in values:
                if p.get("required"):
                    problems.append(f"{method} {template}: missing required {p['in']} parameter {p['name']}")
                continue
            value = _coerce(values[p["name"]], p.get("schema", {}))
            problems += [
                f"{method} {template}: {p['name']}={values[p['name']]!r}: {e}"
                for e in self.validate(p.get("schema", {}), value)
            ]
        declared = {p["name"] for p in params if p["in"] == "query"}
        problems += [f"{method} {template}: unknown query parameter {k}" for k in query if k not in declared]
        if "per_page" in query and query["per_page"].isdigit() and int(query["per_page"]) > 100:
            problems.append(f"{method} {template}: per_page above GitHub's maximum of 100")
        return problems + self._check_body(method, template, op, body, ctype)

    def _check_body(self, method: str, template: str, op: dict[str, Any], body: bytes, ctype: str) -> list[str]:
        spec = self.resolve(op.get("requestBody")) if op.get("requestBody") else None
        if spec is None:
            return [f"{method} {template}: a body where the operation takes none"] if body.strip() else []
        if not body:
            return [f"{method} {template}: no body"] if spec.get("required") else []
        if not ctype.startswith("application/json"):
            return [f"{method} {template}: body sent as {ctype!r}, not application/json"]
        try:
            payload = json.loads(body)
        except ValueError:
            return [f"{method} {template}: the body is not JSON"]
        schema = spec["content"]["application/json"]["schema"]
        return [f"{method} {template} body: {e}" for e in self.validate(schema, payload)]

    def check_response(self, method: str, path: str, status: int, payload: Any) -> list[str]:
        found = self.operation(method, path)
        if found is None:
            return []
        template, op, _, _ = found
        answer = op["responses"].get(str(status))
        if answer is None:
            return [f"{method} {template}: GitHub never answers {status}"]
        content = self.resolve(answer).get("content", {}).get("application/json")
        if content is None or payload is None:
            return []
        return [f"{method} {template} -> {status}: {e}" for e in self.validate(content["schema"], payload)]


@functools.cache
def openapi(plan: str) -> OpenApi:
    return OpenApi(plan)


def _coerce(raw: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        return int(raw) if re.fullmatch(r"-?\d+", raw) else raw
    if kind == "boolean":
        return {"true": True, "false": False}.get(raw, raw)
    return raw


# ----- the fake


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int = 500
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    hang: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


class FakeGitHub:
    def __init__(self, server: HTTPServer, plan: str = "api.github.com", prefix: str = "") -> None:
        self.server, self.prefix, self.api = server, prefix, openapi(plan)
        self.repo = ("octo-org", "octo-repo")
        self.logins = {TOKEN: None, PAT: "release-bot", READ_ONLY: None, APP: None}
        self.authors = {APP: APP_BOT}  # who a token's comments are by, when /user does not say
        self.minimized: dict[str, str] = {}  # node id -> classifier
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: dict[int, dict[str, Any]] = {}
        self.commit_pulls: dict[str, list[int]] = {}
        self.faults: list[Fault] = []
        self.hooks: list[tuple[str, re.Pattern[str], Callable[[], None]]] = []
        self.seen: list[Seen] = []
        self.violations: list[str] = []
        self._next_id = 1000
        self._lock = threading.Lock()
        server.expect_request(re.compile(".*")).respond_with_handler(self.handle)

    @property
    def url(self) -> str:
        return self.server.url_for(self.prefix or "/").rstrip("/")

    @property
    def graphql_path(self) -> str:
        """api.github.com/graphql; on GHES, /api/graphql beside the REST API's /api/v3."""
        return self.prefix.removesuffix("/v3") + "/graphql" if self.prefix else "/graphql"

    # ----- arranging

    def add_pull(
        self, number: int, head_sha: str, state: str = "open", head_owner: str = "octo-org", branch: str = "feature"
    ) -> dict[str, Any]:
        pull = self.api.example("pull-request")
        pull["requested_teams"] = []  # GitHub's own example lacks a field its schema requires of a team
        pull.update(
            number=number,
            state=state,
            id=900 + number,
            html_url=f"https://github.com/{'/'.join(self.repo)}/pull/{number}",
        )
        pull["head"].update(sha=head_sha, ref=branch, label=f"{head_owner}:{branch}")
        pull["head"]["user"]["login"] = head_owner
        self.pulls[number] = pull
        self.comments.setdefault(number, [])
        return pull

    def add_comment(self, number: int, body: str, login: str) -> dict[str, Any]:
        comment = self.api.example("issue-comment")
        with self._lock:
            self._next_id += 1
            cid = self._next_id
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 + cid))
        owner, name = self.repo
        comment.update(
            id=cid,
            body=body,
            created_at=stamp,
            updated_at=stamp,
            node_id=f"IC_{cid}",
            url=f"https://api.github.com/repos/{owner}/{name}/issues/comments/{cid}",
            html_url=f"https://github.com/{owner}/{name}/pull/{number}#issuecomment-{cid}",
            issue_url=f"https://api.github.com/repos/{owner}/{name}/issues/{number}",
        )
        comment["user"].update(
            login=login, id=abs(hash(login)) % 10**6, type="Bot" if login.endswith("[bot]") else "User"
        )
        self.comments.setdefault(number, []).append(comment)
        return comment

    def fail(
        self,
        method: str,
        path: str,
        status: int = 502,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
        hang: float = 0.0,
    ) -> None:
        self.faults.append(Fault(method, re.compile(path), status, body, headers or {}, times, hang))

    def before(self, method: str, path: str, action: Callable[[], None]) -> None:
        """Run `action` (once) just before answering a matching request: another client acting meanwhile."""
        self.hooks.append((method, re.compile(path), action))

    def requests(self, method: str | None = None, path: str = "") -> list[Seen]:
        return [s for s in self.seen if (method is None or s.method == method) and re.search(path, s.path)]

    def ours(self, number: int, login: str = BOT) -> list[dict[str, Any]]:
        return [c for c in self.comments.get(number, []) if c["user"]["login"] == login]

    # ----- answering

    def handle(self, request: Request) -> Response:
        path = request.path
        body = request.get_data()
        query = {k: v for k, v in request.args.items()}
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = body.decode("utf-8", "replace")
        self.seen.append(Seen(request.method, path, query, dict(request.headers), payload))
        if path == self.graphql_path:
            return self._graphql(request, payload)
        if not path.startswith(self.prefix + "/"):
            self.violations.append(f"{request.method} {path}: outside the API prefix {self.prefix!r}")
            return _json(404, {"message": "Not Found"})
        path = path[len(self.prefix) :]
        self.violations += self.api.check_request(
            request.method, path, query, body, request.headers.get("Content-Type", "")
        )
        self._check_headers(request)
        for hook in [h for h in self.hooks if h[0] == request.method and h[1].search(path)]:
            self.hooks.remove(hook)
            hook[2]()
        fault = self._fault(request.method, path)
        if fault is not None:
            if fault.hang:
                time.sleep(fault.hang)
            return _json(
                fault.status, fault.body if fault.body is not None else {"message": "Server Error"}, fault.headers
            )
        status, answer, headers = self._route(request, path, payload)
        if 200 <= status < 300:
            self.violations += self.api.check_response(request.method, path, status, answer)
        return _json(status, answer, headers)

    def _graphql(self, request: Request, payload: Any) -> Response:
        """GraphQL's one endpoint: the two mutations on a comment, by its node id, as GitHub answers them."""
        token = self._token(request)
        if token is None or token not in self.logins:
            return _json(401, {"message": "This endpoint requires you to be authenticated."})
        query = payload.get("query") if isinstance(payload, dict) else None
        variables = payload.get("variables") if isinstance(payload, dict) else None
        name = re.search(r"\{\s*(\w+)\s*\(", query or "")
        if request.method != "POST" or not isinstance(variables, dict) or name is None:
            self.violations.append(f"GraphQL: not a POST of a query with variables: {payload!r}")
            return _json(200, {"errors": [{"message": "Parse error"}]})
        mutation = name.group(1)
        if mutation not in MUTATIONS or set(variables) != MUTATIONS[mutation] or not query.startswith("mutation"):
            self.violations.append(f"GraphQL: unexpected {mutation} with {sorted(variables)}")
            return _json(200, {"errors": [{"message": f"Field '{mutation}' doesn't exist"}]})
        if mutation == "minimizeComment" and variables["why"] not in CLASSIFIERS:
            self.violations.append(f"GraphQL: classifier {variables['why']!r}")
        nodes = {c["node_id"] for comments in self.comments.values() for c in comments}
        if variables["id"] not in nodes:
            return _json(200, {"errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a node"}]})
        if token == READ_ONLY:
            return _json(200, {"errors": [{"type": "FORBIDDEN", "message": "Resource not accessible by integration"}]})
        if mutation == "minimizeComment":
            self.minimized[variables["id"]] = variables["why"]
            return _json(200, {"data": {mutation: {"minimizedComment": {"isMinimized": True}}}})
        self.minimized.pop(variables["id"], None)
        return _json(200, {"data": {mutation: {"unminimizedComment": {"isMinimized": False}}}})

    def _check_headers(self, request: Request) -> None:
        if request.headers.get("Accept") != "application/vnd.github+json":
            self.violations.append(f"Accept header {request.headers.get('Accept')!r}")
        if request.headers.get("X-GitHub-Api-Version") != "2022-11-28":
            self.violations.append("no X-GitHub-Api-Version header")

    def _fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times and fault.method in (method, "*") and fault.path.search(path):
                    fault.times -= 1
                    return fault
        return None

    def _token(self, request: Request) -> str | None:
        auth = request.headers.get("Authorization", "")
        return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None

    def _route(self, request: Request, path: str, payload: Any) -> tuple[int, Any, dict[str, str]]:
        token = self._token(request)
        if token is not None and token not in self.logins:
            return 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}, {}
        owner, name = self.repo
        base = f"/repos/{owner}/{name}"
        if path == "/user":
            login = self.logins.get(token) if token else None
            if login is None:
                return 403, _forbidden(), {}
            return 200, self._user(login), {}
        if token is None:
            return 401, {"message": "Requires authentication"}, {}
        if request.method != "GET" and token == READ_ONLY:
            return 403, _forbidden(), {}
        author = self.authors.get(token) or self.logins.get(token) or BOT
        routes = [
            (r"/issues/(\d+)/comments", self._comments),
            (r"/issues/comments/(\d+)", self._comment),
            (r"/pulls/(\d+)", self._pull),
            (r"/pulls", self._pull_list),
            (r"/commits/([0-9a-f]+)/pulls", self._commit_pulls),
        ]
        for pattern, handler in routes:
            found = re.fullmatch(re.escape(base) + pattern, path)
            if found:
                return handler(request, author, payload, *found.groups())
        return 404, {"message": "Not Found"}, {}

    def _comments(self, request: Request, author: str, payload: Any, number: str) -> tuple[int, Any, dict[str, str]]:
        n = int(number)
        if n not in self.pulls:
            return 404, {"message": "Not Found"}, {}
        if request.method == "POST":
            problem = _body_problem(payload)
            if problem:
                return 422, problem, {}
            return 201, self.add_comment(n, payload["body"], author), {}
        return self._page(request, self.comments[n])

    def _comment(self, request: Request, author: str, payload: Any, cid: str) -> tuple[int, Any, dict[str, str]]:
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] != int(cid):
                    continue
                if comment["user"]["login"] != author:
                    return 403, _forbidden(), {}
                if request.method == "DELETE":
                    comments.remove(comment)
                    return 204, None, {}
                problem = _body_problem(payload)
                if problem:
                    return 422, problem, {}
                comment.update(body=payload["body"], updated_at="2030-01-01T00:00:00Z")
                return 200, comment, {}
        return 404, {"message": "Not Found"}, {}

    def _pull(self, request: Request, author: str, payload: Any, number: str) -> tuple[int, Any, dict[str, str]]:
        pull = self.pulls.get(int(number))
        return (200, pull, {}) if pull else (404, {"message": "Not Found"}, {})

    def _pull_list(self, request: Request, author: str, payload: Any) -> tuple[int, Any, dict[str, str]]:
        state, head = request.args.get("state", "open"), request.args.get("head")
        found = [
            p
            for p in self.pulls.values()
            if state in ("all", p["state"]) and (head is None or p["head"]["label"] == head)
        ]
        return self._page(request, [self._simple(p) for p in found])

    def _commit_pulls(self, request: Request, author: str, payload: Any, sha: str) -> tuple[int, Any, dict[str, str]]:
        return self._page(request, [self._simple(self.pulls[n]) for n in self.commit_pulls.get(sha, [])])

    def _page(self, request: Request, items: list[Any]) -> tuple[int, Any, dict[str, str]]:
        per_page = min(int(request.args.get("per_page", 30)), 100)
        page = int(request.args.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max((len(items) + per_page - 1) // per_page, 1)
        links = []
        if page < last:
            args = {**request.args.to_dict(), "page": page + 1, "per_page": per_page}
            links.append(f'<{self.server.url_for(request.path)}?{urlencode(args)}>; rel="next"')
            args["page"] = last
            links.append(f'<{self.server.url_for(request.path)}?{urlencode(args)}>; rel="last"')
        return 200, chunk, ({"Link": ", ".join(links)} if links else {})

    def _simple(self, pull: dict[str, Any]) -> dict[str, Any]:
        simple = self.api.example("pull-request-simple-items")[0]
        simple["requested_teams"] = []  # as in add_pull: the example predates its schema
        simple.update(number=pull["number"], state=pull["state"], id=pull["id"], html_url=pull["html_url"])
        simple["head"].update(sha=pull["head"]["sha"], ref=pull["head"]["ref"], label=pull["head"]["label"])
        return simple

    def _user(self, login: str) -> dict[str, Any]:
        user = self.api.example("private-user-response-with-public-profile-information")
        user.update(login=login)
        return user


def _forbidden() -> dict[str, str]:
    return {
        "message": "Resource not accessible by integration",
        "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
        "status": "403",
    }


def _body_problem(payload: Any) -> dict[str, Any] | None:
    body = payload.get("body") if isinstance(payload, dict) else None
    if not isinstance(body, str):
        return {"message": 'Invalid request.\n\n"body" wasn\'t supplied.'}
    if len(body) > COMMENT_LIMIT:
        return {
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "IssueComment",
                    "code": "custom",
                    "field": "body",
                    "message": "body is too long (maximum is 65536 characters)",
                }
            ],
        }
    return None


def _json(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    text = "" if payload is None else json.dumps(payload)
    return Response(text, status=status, headers=headers or {}, content_type="application/json; charset=utf-8")


def iter_bodies(seen: list[Seen]) -> Iterator[str]:
    for s in seen:
        if isinstance(s.body, dict) and isinstance(s.body.get("body"), str):
            yield s.body["body"]
