"""Throttling password guessing and token-endpoint floods (Flask-Limiter).

- Sign-in: failed attempts are counted per account (the email typed, known or not, so the
  answer does not reveal which emails exist) and per client IP. Only failures count; once a
  budget is spent the login page answers 429 with `Retry-After`, the same page for every email.
- Token endpoint: every request is counted per client id.

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

from flask import Flask, Response, current_app, request
from flask_limiter import RequestLimit
from flask_limiter.errors import RateLimitExceeded
from limits import RateLimitItem, parse

from app.extensions import limiter
from app.models import User
from app.models.base import sha256_hex

FAILED_LOGIN_STATUS = 401
log = logging.getLogger(__name__)


def client_ip() -> str:
    return request.remote_addr or "unknown"


def account_key() -> str:
    """The account being guessed at, as typed (hashed: no email addresses in counter keys)."""
    email = request.form.get("email") or ""
    return "account:" + sha256_hex(User.normalize_email(email[:254]))


def ip_key() -> str:
    return "ip:" + client_ip()


def token_client_key() -> str:
    """The client a token request claims to be (Basic user name or `client_id`), else the IP."""
    from app.oauth.server import _split_basic  # the robust Basic parser, shared

    client_id, _ = _split_basic(request)
    client_id = client_id or request.form.get("client_id")
    if client_id:
        return "client:" + sha256_hex(client_id[:256])
    return "ip:" + client_ip()


def login_failed(response: Response) -> bool:
    return response.status_code == FAILED_LOGIN_STATUS


def retry_after(limit: RequestLimit) -> int:
    """Whole seconds until the breached window resets (at least 1, at most the window)."""
    return max(1, min(limit.limit.get_expiry(), math.ceil(limit.reset_at - time.time())))


def _setting(name: str) -> Callable[[], str]:
    return lambda: current_app.config[name]


def limit_login(on_breach: Callable[[RequestLimit], Response]):
    """Decorate the login view: failures per account and per IP, POST only."""

    def decorate(view):
        view = limiter.limit(
            _setting("LOGIN_ACCOUNT_LIMIT"), key_func=account_key, scope="login-account", methods=["POST"],
            deduct_when=login_failed, on_breach=on_breach,
        )(view)
        return limiter.limit(
            _setting("LOGIN_IP_LIMIT"), key_func=ip_key, scope="login-ip", methods=["POST"],
            deduct_when=login_failed, on_breach=on_breach,
        )(view)

    return decorate


@functools.lru_cache(maxsize=8)
def _parsed(limit: str) -> RateLimitItem:
    return parse(limit)


def token_request_retry_after() -> int | None:
    """Count this token request against its client's budget (TOKEN_CLIENT_LIMIT): None when it
    may proceed, else the seconds until it may retry.

    A direct hit on Flask-Limiter's storage and strategy (as the /v1 budget does) rather than its
    view decorator: every token request passes here, and the decorator's bookkeeping cost about
    0.05 ms per request (measured in-process), against 0.008 ms for this function."""
    item = _parsed(current_app.config["TOKEN_CLIENT_LIMIT"])
    key = token_client_key()
    try:
        if limiter.limiter.hit(item, "token-client", key):
            return None
        reset_at, _ = limiter.limiter.get_window_stats(item, "token-client", key)
    except Exception as exc:  # the counter store is down: serve (fail open) rather than refuse everyone
        log.warning("rate-limit storage unavailable, token request not counted: %s", type(exc).__name__)
        return None
    return max(1, min(item.get_expiry(), math.ceil(reset_at - time.time())))


def init_throttle(app: Flask) -> None:
    limiter.init_app(app)
    # Flask-Limiter checks application-wide and default limits before every request. This
    # service sets none: only the login view is decorated (it does its own check) and the token
    # endpoint counts itself (token_request_retry_after). The middleware check found nothing to count yet cost ~0.1 ms of CPU on
    # every request (profiled), so it is taken out; the decorated limits are unaffected.
    app.before_request_funcs[None].remove(limiter._check_request_limit)

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
