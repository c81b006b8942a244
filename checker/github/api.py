"""A small client for GitHub's REST API: timeouts on every call, retries that honour rate limits.

The HTTP session is handed in (tests bind it to a loopback server). The client retries 5xx answers,
connection failures and timeouts with exponential backoff, and both forms of rate limit, as 403 or
429: the primary limit (`x-ratelimit-remaining: 0` until `x-ratelimit-reset`) and the secondary one
(`retry-after`). It never waits longer than `max_wait` for one retry: a job is not held for an hour
by an exhausted quota. The token goes only into the Authorization header of requests to the API's
own host, and is scrubbed from every error message.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlsplit

import certifi
import requests
import truststore
from requests.adapters import HTTPAdapter

from checker import __version__
from checker.errors import Error
from checker.github.config import Config, Secret
from checker.github.refusals import cause_of, rate_limited

RETRY_STATUS = frozenset({500, 502, 503, 504})
API_VERSION = "2022-11-28"
MAX_PAGES = 100  # 10,000 comments at 100 a page: far beyond any real pull request


class ApiError(Error):
    """A call that did not succeed; `status` is None when no answer came (down, hanging)."""

    def __init__(self, message: str, status: int | None = None, github_message: str = "", sso: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.github_message = github_message
        self.sso = sso  # GitHub's X-GitHub-SSO header: the token is not authorized for the organization's SAML SSO

    @property
    def cause(self) -> str:
        """The cause GitHub states, by its status, words and headers (`checker/github/refusals.py`)."""
        return cause_of(self.status, self.github_message, self.sso).name

    @property
    def read_only(self) -> bool:
        """GitHub's answer to a token that may not write here (a fork's pull request, no permission)."""
        return self.cause == "read_only"


@dataclass(frozen=True)
class Planned:
    """A write that a dry run did not send."""

    method: str
    url: str
    body: Mapping[str, Any] | None

    def describe(self) -> str:
        headers = "Authorization: Bearer ***\nAccept: application/vnd.github+json"
        payload = json.dumps(self.body, indent=2, ensure_ascii=False) if self.body is not None else ""
        return f"{self.method} {self.url}\n{headers}\n\n{payload}".rstrip() + "\n"


@dataclass
class Client:
    session: requests.Session
    api_url: str
    token: Secret | None = field(default=None, repr=False)
    timeout: float = 15.0
    attempts: int = 4
    max_wait: float = 90.0
    dry_run: bool = False
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time  # wall time, to read x-ratelimit-reset
    # All calls of one run share this many seconds, waits included: a hanging API cannot hold a job for long.
    budget: float = 240.0
    monotonic: Callable[[], float] = time.monotonic
    planned: list[Planned] = field(default_factory=list)
    _started: float | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_config(cls, config: Config, session: requests.Session, **kwargs: Any) -> Client:
        return cls(session, config.api_url, config.token, config.timeout, dry_run=config.dry_run, **kwargs)

    # ----- the calls

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._json(self._send("GET", self.url(path), params=params))

    def paginate(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[Any]:
        """Every item of every page, following the Link header (only within the API's own host)."""
        url: str | None = self.url(path)
        query: Mapping[str, Any] | None = {**(params or {}), "per_page": 100}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self._send("GET", url, params=query)
            items = self._json(response)
            if not isinstance(items, list):
                raise ApiError(f"GET {self._shown(url)}: expected a list, got {type(items).__name__}")
            yield from items
            url, query = self._next(response), None
        raise ApiError(f"GET {self._shown(self.url(path))}: more than {MAX_PAGES} pages")

    def write(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """POST, PATCH or DELETE; a dry run records it instead and returns None."""
        url = self.url(path)
        if self.dry_run:
            self.planned.append(Planned(method, url, body))
            return None
        return self._json(self._send(method, url, json=body))

    def graphql(self, url: str, query: str, variables: Mapping[str, Any]) -> Any:
        """A GraphQL mutation; GitHub answers 200 with an `errors` list when it refuses one."""
        body = {"query": query, "variables": dict(variables)}
        if self.dry_run:
            self.planned.append(Planned("POST", url, body))
            return None
        answer = self._json(self._send("POST", url, json=body))
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if errors:
            first = errors[0] if isinstance(errors, list) and errors else {}
            message = str(first.get("message", "") if isinstance(first, dict) else first)[:300]
            status = 403 if "permission" in message.lower() or "accessible" in message.lower() else 422
            raise self._error(f"POST {self._shown(url)}: {message}", status, message)
        return answer

    def url(self, path: str) -> str:
        return self.api_url.rstrip("/") + path

    @staticmethod
    def path(template: str, **parts: object) -> str:
        """A path with each part percent-encoded, so a name can never add a segment."""
        return template.format(**{k: quote(str(v), safe="") for k, v in parts.items()})

    # ----- sending, with retries

    def _send(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        for attempt in range(1, self.attempts + 1):
            if self._remaining() <= 0:
                raise self._error(
                    f"{method} {self._shown(url)}: not sent, the {self.budget:g} s for API calls ran out", None
                )
            response, failure = self._try(method, url, kwargs)
            wait = self._backoff(attempt) if response is None else self._retry_wait(response, attempt)
            if response is not None and wait is None:
                return self._checked(method, url, response)
            if wait is None or attempt == self.attempts or wait > min(self.max_wait, self._remaining()):
                raise self._gave_up(method, url, response, f"{failure}, after {attempt} attempt(s)")
            self.sleep(wait)
        raise AssertionError("unreachable")

    def _remaining(self) -> float:
        now = self.monotonic()
        if self._started is None:
            self._started = now
        return self.budget - (now - self._started)

    def _try(self, method: str, url: str, kwargs: dict[str, Any]) -> tuple[requests.Response | None, str]:
        """One request: the answer, or None and why there was none."""
        timeout = (min(self.timeout, 10.0), self.timeout)
        try:
            response = self.session.request(method, url, headers=self._headers(url), timeout=timeout, **kwargs)
        except requests.Timeout:
            return None, f"no answer within {self.timeout:g} s"
        except requests.exceptions.SSLError:
            return None, (
                "cannot connect (SSLError: most often a server certificate the runner does not trust; an "
                "internal CA belongs in the runner's trust store)"
            )
        except requests.RequestException as exc:
            return None, f"cannot connect ({type(exc).__name__})"
        return response, f"{response.status_code} {self._message(response)}"

    def _retry_wait(self, response: requests.Response, attempt: int) -> float | None:
        """Seconds to wait before trying again, or None when this answer is final."""
        status = response.status_code
        if status in RETRY_STATUS:
            return self._backoff(attempt)
        if status not in (403, 429):
            return None
        headers = response.headers
        if headers.get("retry-after"):
            return self._retry_after(headers["retry-after"], attempt)
        if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
            try:
                reset = float(headers["x-ratelimit-reset"])
            except ValueError:
                return 60.0
            return max(reset - self.clock(), 0.0) + 1.0
        if rate_limited(status, self._message(response)):
            # A secondary limit without headers: GitHub asks for at least a minute, growing each time.
            return 60.0 * 2.0 ** (attempt - 1)
        return None  # a plain 403: the token may not do this, and asking again will not change that

    def _retry_after(self, value: str, attempt: int) -> float:
        try:
            return max(float(value), 0.0)
        except ValueError:
            pass
        try:
            return max(parsedate_to_datetime(value).timestamp() - self.clock(), 0.0)
        except (TypeError, ValueError):
            return self._backoff(attempt)

    @staticmethod
    def _backoff(attempt: int) -> float:
        return float(2 ** (attempt - 1))

    def _gave_up(self, method: str, url: str, response: requests.Response | None, failure: str) -> ApiError:
        status = response.status_code if response is not None else None
        said = self._message(response) if response is not None else ""
        return self._error(f"{method} {self._shown(url)}: {failure}", status, said, _sso(response))

    def _checked(self, method: str, url: str, response: requests.Response) -> requests.Response:
        if response.status_code >= 400:
            message = self._message(response)
            raise self._error(
                f"{method} {self._shown(url)}: {response.status_code} {message}",
                response.status_code,
                message,
                _sso(response),
            )
        return response

    # ----- helpers

    def _headers(self, url: str) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"onnx-release-checker/{__version__}",
        }
        if self.token is not None and _same_origin(url, self.api_url):
            headers["Authorization"] = f"Bearer {self.token.reveal()}"
        return headers

    def _next(self, response: requests.Response) -> str | None:
        link = response.links.get("next", {}).get("url")
        if not link:
            return None
        if not _same_origin(link, self.api_url):
            raise ApiError(f"refusing to follow a next page outside {self.api_url}")
        return str(link)

    @staticmethod
    def _json(response: requests.Response) -> Any:
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ApiError(f"{response.request.method} {response.url}: the answer is not JSON") from None

    @staticmethod
    def _message(response: requests.Response) -> str:
        try:
            data = response.json()
        except ValueError:
            return response.reason or ""
        message = data.get("message") if isinstance(data, dict) else None
        said = str(message) if message else (response.reason or "")
        # A 422's reason is in its errors (`body is too long`), each a message or a code (`abuse`).
        errors = data.get("errors") if isinstance(data, dict) else None
        details = [str(e.get("message") or e.get("code") or "") for e in errors or [] if isinstance(e, dict)]
        details = [d for d in details if d]
        return (said + (": " + "; ".join(details[:3]) if details else ""))[:300]

    def _shown(self, url: str) -> str:
        return url.split("?", 1)[0]

    def _error(self, message: str, status: int | None, github_message: str = "", sso: str = "") -> ApiError:
        return ApiError(self._scrub(message), status, self._scrub(github_message), self._scrub(sso[:300]))

    def _scrub(self, text: str) -> str:
        token = self.token.reveal() if self.token is not None else ""
        return text.replace(token, "***") if token else text


def _same_origin(url: str, base: str) -> bool:
    a, b = urlsplit(url), urlsplit(base)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)


def _sso(response: requests.Response | None) -> str:
    return response.headers.get("X-GitHub-SSO", "") if response is not None else ""


def trust_context() -> ssl.SSLContext:
    """Certificates the machine trusts (an Enterprise Server's internal CA, installed on the runner) and
    certifi's bundle: requests alone would trust certifi's only."""
    context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=certifi.where())
    return context


class TrustAdapter(HTTPAdapter):
    """requests' adapter, verifying with `trust_context()`, directly and through a proxy."""

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.context = context or trust_context()
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("ssl_context", self.context)
        super().init_poolmanager(*args, **kwargs)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        kwargs.setdefault("ssl_context", self.context)
        return super().proxy_manager_for(proxy, **kwargs)


def new_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = True
    session.mount("https://", TrustAdapter())
    return session
