"""Throttling password guessing and token-endpoint floods.

- Sign-in (a lockout an attacker cannot trigger):
  - a correct password from a browser that signed in to that account before (a device cookie,
    app/auth/devices.py) is never refused: neither the account's delay nor the IP limit applies;
    that browser's own failures have a small budget (LOGIN_DEVICE_LIMIT), after which it counts
    as unknown;
  - from unknown browsers, failures are counted per account (the email typed, known or not, so the
    answer does not reveal which emails exist): the first LOGIN_ACCOUNT_FREE_FAILURES are free,
    then each failure makes the next attempt wait 1, 2, 4 ... seconds, at most
    LOGIN_ACCOUNT_MAX_DELAY (a progressive delay, never a hard lock). Attempts during the wait are
    refused before the password is checked (429, "try again in N seconds", the same for every
    email);
  - per client IP, only failures count (LOGIN_IP_LIMIT), high enough for a shared proxy address.
- Token endpoint: every request is counted per client id and client IP (the id alone is public:
  anyone could spend an app's budget).

Counters live in Redis when REDIS_URL is set (shared by every process), in memory otherwise; if
Redis is down, sign-in counts in this process's memory rather than failing. The client IP is
`request.remote_addr`, which ProxyFix sets from X-Forwarded-For only for the configured number of
trusted proxies (app/security.py): a client cannot pick its own IP.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass

from authlib.oauth2.rfc6749 import InvalidRequestError
from flask import Flask, current_app, request
from limits import RateLimitItem, parse
from werkzeug.wrappers import Request

from app.adapters import SweptMemoryStorage, skip_global_limit_check
from app.extensions import limiter
from app.models import User
from app.models.base import sha256_hex
from app.oauth.client_auth import named_client_id

FAILED_LOGIN_STATUS = 401
log = logging.getLogger(__name__)


def client_ip(req: Request | None = None) -> str:
    """The address a request (this one by default) came from, as ProxyFix settled it."""
    return (req or request).remote_addr or "unknown"


def token_client_key(req: Request) -> str:
    """The client a token request names and the IP it comes from. The name is counted before it is
    verified, but it is the only client the request can authenticate as: authentication reads the
    same `named_client_id`, and a request naming two clients is refused (app/oauth/client_auth.py),
    so a decoy `client_id` is never what gets counted. Client ids are public (every authorization
    URL shows one): keyed on the id alone, anyone could spend an app's budget and lock its users
    out of signing in. With the IP in the key a flood only spends its own."""
    try:
        client_id = named_client_id(req.headers, req.form, req.args)
    except InvalidRequestError:
        client_id = None  # refused before any client is looked up; counted on the IP alone
    claimed = "client:" + sha256_hex(client_id[:256]) + ":" if client_id else ""
    return claimed + "ip:" + client_ip(req)


@dataclass(frozen=True)
class Spent:
    """One request counted against a budget, and where the budget's window stands."""

    allowed: bool
    remaining: int
    reset: int  # whole seconds until the window refills (at least 1)


def spend(item: RateLimitItem, scope: str, key: str) -> Spent | None:
    """Count one request against `key`'s budget in Flask-Limiter's storage (Redis when set).
    None when the counter store is down: the request is served uncounted (fail open, logged)
    rather than every caller being refused. Used where a decorator does not fit or costs too
    much: the token endpoint and the /v1 budget."""
    try:
        allowed = limiter.limiter.hit(item, scope, key)
        reset_at, remaining = limiter.limiter.get_window_stats(item, scope, key)
    except Exception as exc:
        log.warning("rate-limit storage unavailable, %s request not counted: %s", scope, type(exc).__name__)
        return None
    return Spent(allowed, max(0, remaining), max(1, min(item.get_expiry(), math.ceil(reset_at - time.time()))))


@functools.lru_cache(maxsize=8)
def parsed_limit(limit: str) -> RateLimitItem:
    """A limit setting ("5 per minute") parsed once per value: every counted request reads one."""
    return parse(limit)


_TOKEN_BUDGET = "credits_id.token_budget"


def token_request_retry_after(req: Request) -> int | None:
    """Count this token request against its client's budget from its IP (TOKEN_CLIENT_LIMIT): None when it
    may proceed, else the seconds until it may retry.

    Counted once per request whoever asks - the front (app/oauth/front.py), then Flask's route if the
    front handed the request on: the answer is kept in the request's WSGI environ.

    A direct `spend` rather than Flask-Limiter's view decorator: every token request passes
    here, and the decorator's bookkeeping cost about 0.05 ms per request (measured in-process),
    against 0.01 ms for this function."""
    if _TOKEN_BUDGET not in req.environ:
        spent = spend(parsed_limit(current_app.config["TOKEN_CLIENT_LIMIT"]), "token-client", token_client_key(req))
        req.environ[_TOKEN_BUDGET] = None if spent is None or spent.allowed else spent.reset
    retry_after: int | None = req.environ[_TOKEN_BUDGET]
    return retry_after


# -- sign-in: progressive delay per account, failures per IP, known browsers exempt ---------------

FAILURE_MEMORY = 24 * 3600  # seconds an account's failures from unknown browsers are remembered
RETRY_STORE_AFTER = 30  # seconds sign-in counts in memory after the counter store failed
_fallback = SweptMemoryStorage()  # where sign-in counts while Redis is unreachable
_store_failed_at = 0.0


def _store(op: str, *args):
    """One operation on the counter store (Flask-Limiter's: Redis when configured), falling back
    to this process's memory when it fails: sign-in keeps working and keeps counting. After a
    failure the store is left alone for RETRY_STORE_AFTER seconds, so an unreachable Redis costs
    one timeout, not one per counter of every sign-in."""
    global _store_failed_at
    if time.monotonic() - _store_failed_at >= RETRY_STORE_AFTER:
        try:
            return getattr(limiter.storage, op)(*args)
        except Exception as exc:
            _store_failed_at = time.monotonic()
            log.warning(
                "rate-limit storage unavailable, sign-in counted in memory for %d s: %s",
                RETRY_STORE_AFTER,
                type(exc).__name__,
            )
    return getattr(_fallback, op)(*args)


def reset_fallback() -> None:
    """Forget the in-memory counts and try the store again at once (tests; a store back up)."""
    global _store_failed_at
    _store_failed_at = 0.0
    _fallback.reset()


def _key(kind: str, value: str) -> str:
    return f"{current_app.config['RATELIMIT_KEY_PREFIX']}/signin/{kind}:{value}"


def account_key(email: str) -> str:
    """The account being guessed at, as typed (hashed: no email addresses in counter keys)."""
    return sha256_hex(User.normalize_email((email or "")[:254]))


def _seconds_left(key: str) -> int:
    return max(1, math.ceil(_store("get_expiry", key) - time.time()))


def _budget_wait(key: str, limit: str) -> int:
    """Seconds until a spent fixed-window budget refills; 0 while some of it is left."""
    item = parsed_limit(limit)
    return _seconds_left(key) if _store("get", key) >= item.amount else 0


def _spend(key: str, limit: str) -> None:
    item = parsed_limit(limit)
    _store("incr", key, item.get_expiry())


@dataclass(frozen=True)
class Attempt:
    """One password attempt at an account: who it is for, from which known browser (if any)."""

    account: str  # account_key() of the email typed
    device: str | None = None  # the device id of a known browser for that account

    @property
    def trusted(self) -> bool:
        """A known browser whose own failure budget is not spent."""
        return self.device is not None and not _budget_wait(
            _key("device", self.device), current_app.config["LOGIN_DEVICE_LIMIT"]
        )

    def wait(self) -> int:
        """Seconds this attempt must wait before a password is even checked (0: go ahead). The same
        work for known and unknown emails: no password is checked either way."""
        if self.trusted:
            return 0
        account_wait = _seconds_left(_key("wait", self.account)) if _store("get", _key("wait", self.account)) else 0
        ip_wait = _budget_wait(_key("ip", client_ip()), current_app.config["LOGIN_IP_LIMIT"])
        return max(account_wait, ip_wait)

    def failed(self) -> None:
        """Count a wrong password: against the known browser, or against the account (setting the
        next attempt's delay); always against the IP."""
        config = current_app.config
        if self.trusted:
            _spend(_key("device", self.device), config["LOGIN_DEVICE_LIMIT"])
        else:
            failures = _store("incr", _key("failures", self.account), FAILURE_MEMORY)
            excess = failures - int(config["LOGIN_ACCOUNT_FREE_FAILURES"])
            if excess > 0:
                delay = min(2 ** min(excess - 1, 30), int(config["LOGIN_ACCOUNT_MAX_DELAY"]))
                _store("clear", _key("wait", self.account))
                _store("incr", _key("wait", self.account), delay)
        _spend(_key("ip", client_ip()), config["LOGIN_IP_LIMIT"])

    def succeeded(self) -> None:
        """A correct password from an unknown browser: the failures were the member's own typing,
        so the account's delay starts over. (From a known browser nothing is reset: an attacker's
        guesses keep counting while the member signs in.)"""
        if not self.trusted:
            _store("clear", _key("failures", self.account))
            _store("clear", _key("wait", self.account))


def init_throttle(app: Flask) -> None:
    limiter.init_app(app)
    skip_global_limit_check(app, limiter)
