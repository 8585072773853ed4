"""What app/protocol/adapters.py relies on or corrects in its libraries, pinned: each test states a
behaviour of the installed Authlib or Flask-Limiter that one piece of the adapter exists for. When
an upgrade changes it, the test fails and names the piece to revisit (keep it, or drop it when the
library now does the right thing)."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import psycopg
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

from app.core.adapters import LazyDescriptionCursor, SweptMemoryStorage, skip_global_limit_check
from app.core.config import flask_config, load_settings
from app.protocol.adapters import (
    CheckedEndSessionEndpoint,
    InsufficientScopeChallenge,
    OnlyCodeResponseType,
    S256CodeChallenge,
    is_wired,
)

ROOT = Path(__file__).resolve().parents[2]


def pinned(package: str) -> str:
    match = re.search(rf"^{re.escape(package)}==([\w.]+) ", (ROOT / "requirements.lock").read_text(), re.M | re.I)
    assert match, f"{package} is not locked in requirements.lock"
    return match.group(1)


def test_the_libraries_are_the_pinned_versions():
    import authlib
    import flask_limiter

    assert authlib.__version__ == pinned("Authlib")
    assert flask_limiter.__version__ == pinned("Flask-Limiter")
    assert psycopg.__version__ == pinned("psycopg")


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
    """app/protocol/client_auth.py refuses a request naming one client in the query and another in the
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


class _CountsAgainOnRelease:
    """A key lock that, released for the first time, lets another thread count the same key before
    the releasing call goes on: where MemoryStorage reads its answer."""

    def __init__(self, storage: MemoryStorage, key: str):
        self.storage, self.key, self.lock, self.once = storage, key, threading.RLock(), True

    def __enter__(self):
        self.lock.acquire()

    def __exit__(self, *exc):
        self.lock.release()
        if self.once:
            self.once = False
            other = threading.Thread(target=self.storage.incr, args=(self.key, 60))
            other.start()
            other.join(timeout=10)


def test_memory_storage_still_reads_its_count_after_releasing_the_keys_lock():
    """SweptMemoryStorage.incr counts under one lock of its own because MemoryStorage returns the
    value it reads after the key's lock is released: another count in between, and both calls
    answer the later value (two attempts in one place of a sign-in budget)."""
    storage = MemoryStorage()
    lock = _CountsAgainOnRelease(storage, "k")
    storage.locks = defaultdict(lambda: lock)
    assert storage.incr("k", 60) == 2  # this call made 1, another made 2 meanwhile


def test_swept_memory_storage_answers_each_count_once_under_concurrency():
    storage = storage_from_string("swept-memory://")
    answers: list[int] = []
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible

    def count():
        for _ in range(500):
            answers.append(storage.incr("budget", 60))

    try:
        threads = [threading.Thread(target=count) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert sorted(answers) == list(range(1, 4001))


def test_the_rate_limits_count_in_the_swept_storage_without_redis(app, settings):
    """Without REDIS_URL (the tests' settings) the limits count in SweptMemoryStorage; with it, in Redis."""
    from app.core.extensions import limiter

    assert not app.config["REDIS_URL"] and isinstance(limiter.storage, SweptMemoryStorage)
    public = {k: v for k, v in settings.items() if not k.startswith("_")}
    with_redis = flask_config(load_settings({**public, "REDIS_URL": "redis://127.0.0.1:6379/0"}))
    assert with_redis["RATELIMIT_STORAGE_URI"] == "redis://127.0.0.1:6379/0"


# -- psycopg (on PostgreSQL: CI runs these against its database) -----------------------------------

POSTGRES_URL = os.environ.get("TEST_DATABASE_URL", "").replace("+psycopg", "")
requires_postgres = pytest.mark.skipif(
    not POSTGRES_URL.startswith("postgresql"), reason="needs PostgreSQL: set TEST_DATABASE_URL"
)


def described(description) -> list[tuple] | None:
    """A description as plain values (name, type, sizes...), whatever sequence holds it."""
    return None if description is None else [tuple(column) for column in description]


@pytest.fixture
def both():
    """One connection with psycopg's own cursors and one with LazyDescriptionCursor."""
    with (
        psycopg.connect(POSTGRES_URL) as plain,
        psycopg.connect(POSTGRES_URL, cursor_factory=LazyDescriptionCursor) as lazy,
    ):
        yield plain, lazy


@requires_postgres
def test_psycopg_still_builds_every_column_at_every_read_of_description():
    """LazyDescriptionCursor exists because psycopg builds a new list of new Columns each time."""
    with psycopg.connect(POSTGRES_URL) as conn:
        cursor = conn.execute("SELECT 1 AS a, 'x'::text AS b")
        first, again = cursor.description, cursor.description
    assert isinstance(first, list) and first is not again and first[0] is not again[0]
    assert psycopg.Column.__init__.__code__.co_varnames[:3] == ("self", "cursor", "index")


STATEMENTS = [
    ("SELECT 1::int AS n, 'x'::text AS word, now() AS at, NULL::jsonb AS doc, 2.5::numeric(4, 2) AS amount", None),
    ("SELECT", None),  # tuples, no column: described as an empty sequence, not None
    ("CREATE TEMPORARY TABLE described (n int, label varchar(12))", None),
    ("INSERT INTO described VALUES (%(n)s, 'one') RETURNING n, label", {"n": 1}),
    ("INSERT INTO described VALUES (%(n)s, 'two')", {"n": 2}),
    ("UPDATE described SET label = 'none' WHERE n > %(n)s", {"n": 99}),
    ("SELECT n, label FROM described WHERE n > %(n)s", {"n": 99}),
]


@requires_postgres
def test_each_statement_is_described_as_psycopg_describes_it(both):
    plain, lazy = both
    for statement, params in STATEMENTS:
        expected = described(plain.execute(statement, params).description)
        answer = lazy.execute(statement, params).description
        assert described(answer) == expected, statement
        if expected is not None:
            assert len(answer) == len(expected) and answer == list(answer)
            assert [column.name for column in answer] == [column[0] for column in expected]


@requires_postgres
def test_columns_are_built_when_read_and_index_like_a_list(both):
    _, lazy = both
    description = lazy.execute("SELECT 1 AS a, 2 AS b, 3 AS c").description
    assert description._columns == [None, None, None]  # nothing built yet
    assert description[-1].name == "c" and description[-1] is description[2]
    assert [column.name for column in description[:2]] == ["a", "b"] and description._columns[1] is not None
    with pytest.raises(IndexError):
        description[3]


@requires_postgres
def test_a_description_still_describes_its_own_result_after_the_cursor_moved_on(both):
    _, lazy = both
    cursor = lazy.cursor()
    earlier = cursor.execute("SELECT 1 AS first_one, 'x' AS second_one").description
    cursor.execute("SELECT now() AS other")
    assert [column.name for column in earlier] == ["first_one", "second_one"]
    assert [column.name for column in cursor.description] == ["other"]


@requires_postgres
def test_executemany_and_a_second_result_set_are_described_as_psycopg_does(both):
    plain, lazy = both
    for conn in (plain, lazy):
        conn.execute("CREATE TEMPORARY TABLE many (n int)")
    answers = []
    for conn in (plain, lazy):
        cursor = conn.cursor()
        cursor.executemany("INSERT INTO many VALUES (%(n)s)", [{"n": 2}, {"n": 3}])
        none = cursor.description
        cursor.execute("SELECT 1 AS a; SELECT 2 AS b, 3 AS c")
        first = described(cursor.description)
        assert cursor.nextset()
        answers.append((none, first, described(cursor.description)))
    assert answers[0] == answers[1] and answers[1][0] is None and [c[0] for c in answers[1][2]] == ["b", "c"]


# -- Flask's session cookies ------------------------------------------------------------------------


def test_flask_signs_session_cookies_with_a_python_sha1_wrapper():
    """SessionCookies exists because Flask's digest is a Python function, which keeps `hmac` on its
    pure-Python HMAC; given hashlib.sha1 itself, OpenSSL computes the same MAC."""
    import hashlib

    from flask.sessions import SecureCookieSessionInterface

    assert SecureCookieSessionInterface.digest_method is not hashlib.sha1
    assert callable(SecureCookieSessionInterface.digest_method)


def cookie_app(interface, secret: str = "s" * 32, fallbacks: list[str] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(SECRET_KEY=secret, SECRET_KEY_FALLBACKS=fallbacks or [])
    app.session_interface = interface
    return app


def test_session_cookies_are_flasks_own_byte_for_byte(monkeypatch):
    from flask.sessions import SecureCookieSessionInterface

    from app.core.adapters import SessionCookies

    monkeypatch.setattr(time, "time", lambda: 1_790_000_000.0)  # itsdangerous's timestamp
    session = {"bid": "b" * 22, "sid": "s" * 43, "csrf_token": "c" * 40, "_permanent": True, "2fa": {"u": "x", "t": 1}}
    ours, flasks = cookie_app(SessionCookies()), cookie_app(SecureCookieSessionInterface())
    made = ours.session_interface.get_signing_serializer(ours).dumps(session)
    assert made == flasks.session_interface.get_signing_serializer(flasks).dumps(session)
    assert flasks.session_interface.get_signing_serializer(flasks).loads(made) == session


def test_session_cookies_follow_a_new_secret_key():
    from itsdangerous import BadSignature

    from app.core.adapters import SessionCookies

    app = cookie_app(SessionCookies(), secret="old" * 11)
    signed_with_old = app.session_interface.get_signing_serializer(app).dumps({"sid": "x"})
    app.secret_key = "new" * 11
    with pytest.raises(BadSignature):
        app.session_interface.get_signing_serializer(app).loads(signed_with_old)
    app.config["SECRET_KEY_FALLBACKS"] = ["old" * 11]  # the rotation's grace: the old key still reads
    assert app.session_interface.get_signing_serializer(app).loads(signed_with_old) == {"sid": "x"}


def csrf_app() -> Flask:
    from flask_wtf.csrf import CSRFProtect

    app = Flask(__name__)
    app.config.update(SECRET_KEY="k" * 32)
    CSRFProtect(app)
    return app


def test_flask_wtf_forms_still_sign_a_token_whenever_they_are_built(monkeypatch):
    """CheckedForm exists because a FlaskForm's CSRF field signs a token at every construction,
    a POST that CSRFProtect has already checked included."""
    import flask_wtf.csrf
    from flask_wtf import FlaskForm

    from app.core.adapters import CheckedForm

    signed = []
    sign = flask_wtf.csrf.URLSafeTimedSerializer.dumps
    monkeypatch.setattr(
        flask_wtf.csrf.URLSafeTimedSerializer, "dumps", lambda *args, **kw: signed.append(1) or sign(*args, **kw)
    )
    with csrf_app().test_request_context("/", method="POST"):
        FlaskForm()
        assert len(signed) == 1
        form = CheckedForm()
        assert len(signed) == 1 and "csrf_token" not in form._fields  # nothing signed, no such field


def test_the_csrf_secret_made_ahead_is_the_one_flask_wtf_signs_and_checks():
    """new_csrf_secret writes where generate_csrf keeps its secret: generate_csrf keeps it and signs
    tokens with it, validate_csrf accepts them, and a token signed before is no longer handed out."""
    from flask import session
    from flask_wtf.csrf import generate_csrf, validate_csrf
    from wtforms import ValidationError

    from app.core.adapters import new_csrf_secret

    app = csrf_app()
    with app.test_request_context("/"):
        before = generate_csrf()
        new_csrf_secret()
        secret = session["csrf_token"]
        after = generate_csrf()
        assert after != before and session["csrf_token"] == secret
        validate_csrf(after)
        with pytest.raises(ValidationError):
            validate_csrf(before)
        new_csrf_secret(keep_present=True)
        assert session["csrf_token"] == secret and generate_csrf() == after


def test_flask_wtf_still_reads_a_json_body_as_form_data():
    """pages_read_form_bodies_only exists because Flask-WTF turns a JSON body into a form's data,
    which breaks on a JSON list (and hands validators non-text values)."""
    from flask_wtf import FlaskForm
    from flask_wtf.form import _Auto

    from app.core.adapters import _flask_wtf_form_data

    app = Flask(__name__)
    with app.test_request_context("/", method="POST", json={"email": 5}):
        assert _flask_wtf_form_data(FlaskForm.Meta(), None, _Auto)["email"] == 5
    with app.test_request_context("/", method="POST", json=["email"]), pytest.raises(ValueError):
        _flask_wtf_form_data(FlaskForm.Meta(), None, _Auto)


def test_pages_read_no_form_data_from_a_json_body(app):
    from flask_wtf import FlaskForm

    with app.test_request_context("/", method="POST", json={"email": 5}):
        assert FlaskForm.Meta().wrap_formdata(None, _auto()) is None
    with app.test_request_context("/", method="POST", data={"email": "a@b.example"}):
        assert FlaskForm.Meta().wrap_formdata(None, _auto())["email"] == "a@b.example"


def _auto():
    from flask_wtf.form import _Auto

    return _Auto


def test_flask_reads_the_session_cookie_with_app_json_and_session_json_does_not():
    """SessionJSON exists because Flask's session serializer parses with `app.json`, which reads
    request bodies as I-JSON here: the cookie, ours and signed, needs none of its checks."""
    from flask.json.provider import DefaultJSONProvider
    from flask.json.tag import TaggedJSONSerializer

    from app.core.adapters import SessionCookies, SessionJSON

    class Refusing(DefaultJSONProvider):
        def loads(self, s, **kwargs):
            raise AssertionError("read with app.json")

    app = Flask(__name__)
    app.json = Refusing(app)
    value = {"sid": "abc", "t": (1, b"x"), "_permanent": True}
    with app.app_context():
        raw = SessionJSON().dumps(value)
        with pytest.raises(AssertionError):
            TaggedJSONSerializer().loads(raw)
        assert SessionJSON().loads(raw) == value
    assert isinstance(SessionCookies.serializer, SessionJSON)
