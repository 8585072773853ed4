"""Throttling password guessing and token-endpoint floods (Flask-Limiter).

- Sign-in: failed attempts are counted per account (the email typed, known or not, so the
  answer does not reveal which emails exist) and per client IP. Only failures count; once a
  budget is spent the login page answers 429 with `Retry-After`, the same page for every email.
- Token endpoint: every request is counted per client id and client IP (the id alone is public:
  anyone could spend an app's budget).

Counters live in Redis when REDIS_URL is set (shared by every process), in memory otherwise.
The client IP is `request.remote_addr`, which ProxyFix sets from X-Forwarded-For only for the
configured number of trusted proxies (app/security.py): a client cannot pick its own IP.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from authlib.oauth2.rfc6749 import InvalidRequestError
from flask import Flask, Response, current_app, request
from flask_limiter import RequestLimit
from flask_limiter.errors import RateLimitExceeded
from limits import RateLimitItem, parse

from app.adapters import skip_global_limit_check
from app.extensions import limiter
from app.models import User
from app.models.base import sha256_hex
from app.oauth.client_auth import named_client_id

FAILED_LOGIN_STATUS = 401
log = logging.getLogger(__name__)


def client_ip() -> str:
    return request.remote_addr or "unknown"


def account_key() -> str:
    """The account being guessed at, as typed (hashed: no email addresses in counter keys)."""
    email = request.form.get("email") or ""
    return "account:" + sha256_hex(User.normalize_email(email[:254]))


def signed_in_account_key() -> str:
    """The signed-in member's account, under the same key as failed logins for that email: a
    stolen session guessing the password on the account page spends the same budget."""
    from app.auth.sessions import current_user  # sessions -> logs -> ...; import when called

    user = current_user()
    return "account:" + sha256_hex(user.email) if user else ip_key()


def ip_key() -> str:
    return "ip:" + client_ip()


def token_client_key() -> str:
    """The client a token request names and the IP it comes from. The name is counted before it is
    verified, but it is the only client the request can authenticate as: authentication reads the
    same `named_client_id`, and a request naming two clients is refused (app/oauth/client_auth.py),
    so a decoy `client_id` is never what gets counted. Client ids are public (every authorization
    URL shows one): keyed on the id alone, anyone could spend an app's budget and lock its users
    out of signing in. With the IP in the key a flood only spends its own."""
    try:
        client_id = named_client_id(request.headers, request.form, request.args)
    except InvalidRequestError:
        client_id = None  # refused before any client is looked up; counted on the IP alone
    claimed = "client:" + sha256_hex(client_id[:256]) + ":" if client_id else ""
    return claimed + "ip:" + client_ip()


def login_failed(response: Response) -> bool:
    return response.status_code == FAILED_LOGIN_STATUS


def retry_after(limit: RequestLimit) -> int:
    """Whole seconds until the breached window resets (at least 1, at most the window)."""
    return max(1, min(limit.limit.get_expiry(), math.ceil(limit.reset_at - time.time())))


def _setting(name: str) -> Callable[[], str]:
    return lambda: current_app.config[name]


def limit_login(on_breach: Callable[[RequestLimit], Response], account: Callable[[], str] = account_key):
    """Decorate a view that checks a password (the login page; the account page's password change,
    with `account=signed_in_account_key`): failures per account and per IP, POST only."""

    # Shared limits: one budget per account (and per IP) across every view that checks a password.
    # A plain `limit` would give each view its own ("<endpoint>:login-account").
    def decorate(view):
        view = limiter.shared_limit(
            _setting("LOGIN_ACCOUNT_LIMIT"), "login-account", key_func=account, methods=["POST"],
            deduct_when=login_failed, on_breach=on_breach,
        )(view)
        return limiter.shared_limit(
            _setting("LOGIN_IP_LIMIT"), "login-ip", key_func=ip_key, methods=["POST"],
            deduct_when=login_failed, on_breach=on_breach,
        )(view)

    return decorate


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
def _parsed(limit: str) -> RateLimitItem:
    return parse(limit)


def token_request_retry_after() -> int | None:
    """Count this token request against its client's budget from its IP (TOKEN_CLIENT_LIMIT): None when it
    may proceed, else the seconds until it may retry.

    A direct `spend` rather than Flask-Limiter's view decorator: every token request passes
    here, and the decorator's bookkeeping cost about 0.05 ms per request (measured in-process),
    against 0.01 ms for this function."""
    spent = spend(_parsed(current_app.config["TOKEN_CLIENT_LIMIT"]), "token-client", token_client_key())
    return None if spent is None or spent.allowed else spent.reset


def init_throttle(app: Flask) -> None:
    limiter.init_app(app)
    skip_global_limit_check(app, limiter)

    @app.errorhandler(RateLimitExceeded)
    def rate_limited(error: RateLimitExceeded):
        """A limit's own breach response (the login page, the token endpoint's JSON) wins over
        the generic error pages; limits without one get the generic 429 page or JSON."""
        if error.response is not None:
            return error.response
        from app.errors import error_page, is_machine_request, machine_error

        if is_machine_request():
            return machine_error(429, "Too many requests. Retry later.")
        return error_page("Too many attempts", "Too many attempts. Wait a moment and try again.", 429)
