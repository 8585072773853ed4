"""The catalog API over HTTP: one request per call, the envelope unwrapped, every refusal turned
into a Failure with the API's own message and the request id, a 429 waited out and retried.

The API's rules (page sizes, parameter checks) stay the API's: the client sends what it is given
and reports what the API says, so there is one place for each rule. What the client checks
itself is only what must hold before a key leaves the machine: a secret key (credentials.py) and
an address that does not carry it in clear text to another host (`api_root`)."""

from __future__ import annotations

import email.utils
import ipaddress
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from credits_cli.errors import BadUsage, Failure, NotFound, RateLimited, Refused
from credits_cli.terminal import clean, say

DEFAULT_ROOT = "http://127.0.0.1:5000/v1"  # `make run`'s provider
URL_ENV = "CREDITS_API_URL"
API_PATH = "/v1"
REQUEST_ID = "X-Gateway-Request-Id"
MAX_WAIT = 60  # seconds: a longer Retry-After (a day's cap, say) ends the command instead
MAX_PAGE = 50  # the page size `--all` asks for when no --limit is given: fewest requests

# What each refusal means to a script (errors.py); any other status is a failure (exit 1).
STATUS_FAILURES: dict[int, type[Failure]] = {400: BadUsage, 401: Refused, 403: Refused, 404: NotFound, 429: RateLimited}
HINTS = {
    401: "The API does not know this key (mistyped, rotated or revoked): set CREDITS_API_KEY or run `credits login`.",
}


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_root(url: str) -> str:
    """The catalog API's address from `--base-url` / CREDITS_API_URL: `https://…/v1`, or plain
    `http` on this machine only (the key would cross the network in clear text). An address
    without a path means that origin's `/v1`."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        host, parts = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise BadUsage(f"the API address {url!r} is not an http(s) URL")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise BadUsage("the API address takes no user, query or fragment")
    if parts.scheme == "http" and not _loopback(host):
        raise BadUsage(
            f"refusing to send the API key over plain http to {host}",
            "Use the https address (plain http is for a provider on this machine).",
        )
    path = parts.path.rstrip("/") or API_PATH
    return f"{parts.scheme}://{parts.netloc}{path}"


def segment(value: str) -> str:
    """A path segment, quoted so that an identifier can never change the path."""
    return quote(value, safe="")


def _user_agent() -> str:
    try:
        mine = version("credits-id")
    except PackageNotFoundError:
        mine = "unknown"
    return f"credits-cli/{mine} python-requests/{requests.__version__}"


def _seconds(retry_after: str | None) -> int:
    """Retry-After in seconds: a number, or an HTTP date (RFC 9110); 1 when missing or unreadable."""
    if retry_after is None:
        return 1
    value = retry_after.strip()
    if value.isdigit():
        return int(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 1
    return max(1, math.ceil(when.timestamp() - time.time()))


def _network_reason(exc: BaseException) -> str:
    """The operating system's words for a failed connection ("Connection refused"), found in the
    exception's chain; the exception's kind otherwise."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
        linked = [getattr(current, "reason", None), current.__cause__, current.__context__, *current.args]
        pending += [e for e in linked if isinstance(e, BaseException)]
    return type(exc).__name__


def _refusal(response: requests.Response, body: Any, what: str) -> Failure:
    """The Failure for an answer that is not a success: the API's message (envelope or gateway
    shape) and the request id, or - for an answer that is not the API's - what came back."""
    status = response.status_code
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message:
        kind = response.headers.get("Content-Type", "no content type").split(";")[0]
        return Failure(
            f"unexpected answer to {what}: HTTP {status} ({kind})",
            "Is --base-url (CREDITS_API_URL) the catalog API's address, ending in /v1?",
        )
    request_id = response.headers.get(REQUEST_ID) or (body.get("request_id") if isinstance(body, dict) else None)
    where = f"HTTP {status}, request id {clean(str(request_id))}" if request_id else f"HTTP {status}"
    return STATUS_FAILURES.get(status, Failure)(f"{clean(message)} ({where})", HINTS.get(status))


@dataclass
class Client:
    """One API key against one API root. `retries`: how often a 429 is waited out and retried."""

    root: str
    key: str
    timeout: float = 30.0
    retries: int = 3
    session: requests.Session = field(default_factory=requests.Session)

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.call("GET", path, params=params)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.call("POST", path, body=body)

    def call(self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        """The `data` of one operation; a 429 is retried after its Retry-After, `retries` times."""
        what = f"{method} {self.root}{path}"
        for attempt in range(self.retries + 1):
            response = self._send(method, self.root + path, params, body, what)
            if response.status_code != 429:
                break
            wait = _seconds(response.headers.get("Retry-After"))
            refusal = _refusal(response, self._json(response), what)
            if attempt == self.retries:
                raise RateLimited(f"{refusal.message}; gave up after {self.retries} retries")
            if wait > MAX_WAIT:
                raise RateLimited(f"{refusal.message}; the API asks to wait {wait} s: try again then")
            say(f"{refusal.message}; retrying in {wait} s ({attempt + 1} of {self.retries})")
            time.sleep(wait)
        answer = self._json(response)
        if (
            response.status_code == 200
            and isinstance(answer, dict)
            and answer.get("result") == "ok"
            and "data" in answer
        ):
            return answer["data"]
        raise _refusal(response, answer, what)

    def _send(self, method: str, url: str, params: Any, body: Any, what: str) -> requests.Response:
        headers = {"x-api-key": self.key, "Accept": "application/json", "User-Agent": _user_agent()}
        try:
            # No redirects: the key header would follow one to wherever it points.
            return self.session.request(
                method, url, params=params, json=body, headers=headers, timeout=self.timeout, allow_redirects=False
            )
        except requests.Timeout:
            raise Failure(f"no answer to {what} within {self.timeout:g} s") from None
        except requests.ConnectionError as exc:
            raise Failure(f"cannot reach {self.root}: {_network_reason(exc)}") from None
        except requests.RequestException as exc:
            raise Failure(f"{what} failed: {type(exc).__name__}") from None

    @staticmethod
    def _json(response: requests.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            return None

    def every_page(
        self, path: str, limit: int | None, offset: int | None, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Every row of a paged list from `offset` on, one request a page, until offset >= totalCount
        (the spec's stopping rule; an empty page stops too, should rows vanish meanwhile). The
        result is one page holding them all: `limit` is the number of rows it holds."""
        start = at = offset or 0
        items: list[Any] = []
        while True:
            page = self.get(path, {"limit": limit or MAX_PAGE, "offset": at})
            items += page["items"]
            total = page["totalCount"]
            at = page["offset"] + max(1, page["limit"])
            if progress is not None:
                progress(min(len(items), max(0, total - start)), max(0, total - start))
            if at >= total or not page["items"]:
                return {"limit": len(items), "offset": start, "totalCount": total, "items": items}
