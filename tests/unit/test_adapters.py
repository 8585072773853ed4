"""What app/adapters.py relies on or corrects in its libraries, pinned: each test states a
behaviour of the installed Authlib or Flask-Limiter that one piece of the adapter exists for. When
an upgrade changes it, the test fails and names the piece to revisit (keep it, or drop it when the
library now does the right thing)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.integrations.flask_oauth2.requests import FlaskOAuth2Request
from authlib.oauth2.rfc6749 import UnsupportedResponseTypeError
from authlib.oauth2.rfc6749.authenticate_client import ClientAuthentication
from authlib.oauth2.rfc6750 import InsufficientScopeError
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.rpinitiated import EndSessionEndpoint
from flask import Flask
from flask_limiter import Limiter
from limits.storage import MemoryStorage, storage_from_string
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from app.adapters import (
    CheckedEndSessionEndpoint,
    InsufficientScopeChallenge,
    OnlyCodeResponseType,
    S256CodeChallenge,
    SweptMemoryStorage,
    is_wired,
    skip_global_limit_check,
)
from app.config import flask_config, load_settings

ROOT = Path(__file__).resolve().parents[2]


def pinned(package: str) -> str:
    match = re.search(rf"^{re.escape(package)}==([\w.]+)$", (ROOT / "requirements.txt").read_text(), re.M | re.I)
    assert match, f"{package} is not pinned in requirements.txt"
    return match.group(1)


def test_the_libraries_are_the_pinned_versions():
    import authlib
    import flask_limiter

    assert authlib.__version__ == pinned("Authlib")
    assert flask_limiter.__version__ == pinned("Flask-Limiter")


def test_authlib_pkce_still_accepts_plain_and_defaults_to_it():
    """S256CodeChallenge exists because Authlib's default would accept `plain`."""
    assert CodeChallenge.DEFAULT_CODE_CHALLENGE_METHOD == "plain"
    assert "plain" in CodeChallenge.SUPPORTED_CODE_CHALLENGE_METHOD
    assert S256CodeChallenge.SUPPORTED_CODE_CHALLENGE_METHOD == ["S256"]
    assert S256CodeChallenge.DEFAULT_CODE_CHALLENGE_METHOD == "S256"


def test_authlib_still_echoes_the_response_type_into_its_error():
    """OnlyCodeResponseType exists because the echoed value may hold anything."""
    assert 'x"y' in UnsupportedResponseTypeError('x"y').get_error_description()
    assert OnlyCodeResponseType('x"y').get_error_description() == "Only response_type=code is supported."


def test_authlib_insufficient_scope_still_has_no_bearer_challenge():
    """InsufficientScopeChallenge exists because RFC 6750 3 wants `WWW-Authenticate` on a 403 too."""
    assert "WWW-Authenticate" not in dict(InsufficientScopeError().get_headers())
    challenge = dict(InsufficientScopeChallenge().get_headers())["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="insufficient_scope", error_description="')


def test_authlib_merges_query_and_body_with_the_query_first():
    """app/oauth/client_auth.py refuses a request naming one client in the query and another in the
    body, because Authlib's payload reads the query first while the form methods read the body."""
    environ = EnvironBuilder(method="POST", path="/token?client_id=query", data={"client_id": "body"}).get_environ()
    request = FlaskOAuth2Request(Request(environ))
    assert request.payload.client_id == "query"
    assert request.form.get("client_id") == "body"


def test_authlib_takes_the_first_client_authentication_method_that_passes():
    """check_request refuses two methods in one request: Authlib would take the first that passes."""
    seen = []

    def passes(name):
        def method(query, request):
            seen.append(name)
            return type("C", (), {"check_endpoint_auth_method": lambda self, m, e: True})()

        return method

    auth = ClientAuthentication(query_client=lambda client_id: None)
    auth.register("a", passes("a"))
    auth.register("b", passes("b"))
    request = type("R", (), {})()
    auth.authenticate(request, ["a", "b"], "token")
    assert seen == ["a"] and request.auth_method == "a"


def test_authlib_keeps_its_grants_in_a_private_list():
    server = AuthorizationServer()
    assert server._authorization_grants == [] and not is_wired(server)


def test_authlib_end_session_decides_in_the_private_methods_the_adapter_wraps():
    for name in ("_validate_id_token_hint", "_is_valid_post_logout_redirect_uri"):
        assert callable(getattr(EndSessionEndpoint, name)), name
        assert getattr(CheckedEndSessionEndpoint, name) is not getattr(EndSessionEndpoint, name), name


def test_flask_limiter_checks_every_request_unless_the_hook_is_removed():
    app = Flask(__name__)
    limiter = Limiter(key_func=lambda: "k", app=app, storage_uri="memory://")
    assert limiter._check_request_limit in app.before_request_funcs[None]
    skip_global_limit_check(app, limiter)
    assert limiter._check_request_limit not in app.before_request_funcs[None]
    with pytest.raises(ValueError):
        skip_global_limit_check(app, limiter)  # once only: a second removal is a programming error


def test_limits_memory_storage_still_sweeps_from_a_timer_thread_it_restarts():
    """SweptMemoryStorage exists because every count restarts MemoryStorage's 10 ms timer thread."""
    storage = MemoryStorage()
    storage.incr("k", 60)
    first = storage.timer
    time.sleep(0.05)  # the timer has run
    storage.incr("k", 60)
    assert storage.timer is not first and storage.timer.is_alive()
    assert hasattr(MemoryStorage, "_MemoryStorage__schedule_expiry")
    assert hasattr(MemoryStorage, "_MemoryStorage__expire_events")


def test_swept_memory_storage_counts_and_expires_without_threads():
    storage = storage_from_string("swept-memory://")
    assert isinstance(storage, SweptMemoryStorage)
    initial = storage.timer  # the one MemoryStorage starts when it is made
    for _ in range(50):
        storage.incr("token-client", 60)
        time.sleep(0.0005)
    assert storage.get("token-client") == 50
    assert storage.timer is initial  # counting started no timer thread
    storage.incr("short", 0.05)
    time.sleep(0.06)
    assert storage.get("short") == 0  # a counter's own expiry is checked when it is read
    storage.incr("gone", 0.01)
    time.sleep(0.02)
    storage.next_sweep = 0  # the sweep is due: the next count frees the expired counters
    storage.incr("token-client", 60)
    assert "gone" not in storage.storage and storage.get("token-client") == 51


def test_the_rate_limits_count_in_the_swept_storage_without_redis(app, settings):
    """Without REDIS_URL (the tests' settings) the limits count in SweptMemoryStorage; with it, in Redis."""
    from app.extensions import limiter

    assert not app.config["REDIS_URL"] and isinstance(limiter.storage, SweptMemoryStorage)
    public = {k: v for k, v in settings.items() if not k.startswith("_")}
    with_redis = flask_config(load_settings({**public, "REDIS_URL": "redis://127.0.0.1:6379/0"}))
    assert with_redis["RATELIMIT_STORAGE_URI"] == "redis://127.0.0.1:6379/0"
