"""Malformed input, wherever a route reads it, is a clear 4xx in the caller's language - never a
5xx - and a refused request changes nothing: no row written, and for API keys no call on the
`api_requests` meter (issue 49, item 10).

The sweep walks the app's URL map: every route and method (the /v1 data API and /embed/v1 with an
API key and with an access token, the console and account pages as a signed-in admin with a valid
CSRF token, the sign-in pages and the OAuth endpoints as a browser or an app would call them), with
each malformed kind put in each path variable, in every query and form parameter the service reads,
and in JSON bodies. The rules under test are in app/core/input_rules.py (path integers, JSON bodies)
and app/core/security.py (NUL bytes); the property-based side is in test_fuzz.py."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from itsdangerous import URLSafeTimedSerializer
from sqlalchemy import event, func, select
from sqlalchemy.engine import Engine
from wtforms.fields.core import UnboundField

from app.core.extensions import db, limiter
from app.models import ApiUsage, LoginSession, Role, SigningKey
from app.models.base import sha256_hex, utcnow
from tests.api_support import make_catalog, mint_token
from tests.factories import make_client, make_member
from tests.integration.test_fuzz import LOGOUT_PARAMS, OAUTH_AUTHORIZE, TOKEN_PARAMS, TOKEN_QUERY
from tests.issued import separate_app
from tests.key_support import make_key, make_roster

ROOT = Path(__file__).resolve().parents[2]
INT64_MAX = 2**63 - 1
# Path values, already percent-encoded as a client would send them.
PATH_KINDS = {
    "int past 64 bits": "99999999999999999999999",
    "int64 max + 1": str(INT64_MAX + 1),
    "other script's digits": quote("١٢"),
    "negative": "-1",
    "NUL": "a%00b",
    "encoded surrogate": "%ED%A0%80",
    "not UTF-8": "%FF%FE",
    "overlong": "A" * 5000,
}
# Query and form values (encoded here: surrogatepass lets a lone surrogate reach the wire as its bytes).
VALUE_KINDS = {
    "NUL": "a\x00b",
    "lone surrogate": "\ud800",
    "not UTF-8": b"\xff\xfe",
    "huge number": "9" * 40,
    "past 64 bits": str(2**64),
    "overlong": "x" * 3000,
    "float": "1e309",
}
# JSON bodies outside I-JSON, and well-formed ones of the wrong types where strings are expected.
JSON_KINDS = {
    "escaped lone surrogate": '{"keyword": "\\ud800"}',
    "raw surrogate bytes": b'{"keyword": "\xed\xa0\x80"}',
    "escaped NUL": '{"keyword": "a\\u0000b"}',
    "surrogate in a name": '{"\\udfff": "x", "keyword": "x"}',
    "deep nesting": "[" * 50_000 + "]" * 50_000,
    "nesting past the limit": '{"keyword": ' + "[" * 100 + "]" * 100 + "}",
    "NaN": '{"keyword": NaN}',
    "number out of range": '{"keyword": "x", "n": 1e999}',
    "integer past 64 bits": '{"keyword": "x", "n": 18446744073709551616}',
    "duplicate names": '{"keyword": "a", "keyword": "b"}',
    "not UTF-8": b'{"keyword": "\xff"}',
    "keyword a number": '{"keyword": 12345678901234567890}',
    "keyword a list": '{"keyword": ["a"]}',
    "keyword an object": '{"keyword": {"a": 1}}',
    "keyword null": '{"keyword": null}',
    "type not a list": '{"keyword": "a", "type": "track"}',
    "type of numbers": '{"keyword": "a", "type": [1]}',
    "a list body": '["keyword"]',
    "a string body": '"keyword"',
}
MACHINE = (
    "/api/auth/oauth2/token",
    "/api/auth/oauth2/revoke",
    "/api/auth/oauth2/introspect",
    "/api/auth/oauth2/register",
)
API = ("/v1/", "/embed/v1/")
# Files, not answers: they read no input (the widget's script: tests/unit/test_widget_script.py).
SKIPPED_RULES = {"/static/<path:filename>", "/embed/v1/widget.js", "/embed/v1/widget.<digest>.js"}


def read_parameter_names() -> list[str]:
    """Every query and form parameter the service reads: the names its code asks `request.args`,
    `.form` and `.values` for, every field of every form, and the protocol's parameters."""
    from flask_wtf import FlaskForm

    names = {"limit", "offset", "cursor", "q", "names", "track_ids", "spotify_track_ids", "keyword", "type"}
    pattern = re.compile(r"""(?:args|form|values)(?:\.get|\.getlist)?[\[(]\s*["']([A-Za-z_]+)["']""")
    for source in (ROOT / "app").rglob("*.py"):
        names.update(pattern.findall(source.read_text()))
    forms, seen = [FlaskForm], set()
    while forms:
        form = forms.pop()
        seen.add(form)
        forms.extend(sub for sub in form.__subclasses__() if sub not in seen)
        names.update(name for name in dir(form) if isinstance(getattr(form, name, None), UnboundField))
    names.update(OAUTH_AUTHORIZE + TOKEN_PARAMS + TOKEN_QUERY + LOGOUT_PARAMS)
    names.discard("csrf_token")
    return sorted(names)


@dataclass
class World:
    app: object
    good: dict[str, str]  # a real value for each path variable name
    key_value: str
    key_id: str
    access_token: str
    member_id: str
    names: list[str]
    csrf: URLSafeTimedSerializer
    writes: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    recording: bool = False

    def signed_in(self) -> tuple[str, str]:
        """A fresh session of the admin (a swept POST may end the previous one): its cookie and a
        valid CSRF token."""
        sid, raw, now = secrets.token_urlsafe(32), secrets.token_hex(20), utcnow()
        login = LoginSession(
            session_hash=sha256_hex(sid), user_id=self.member_id, auth_time=now, expires_at=now + timedelta(hours=1)
        )
        db.session.add(login)
        db.session.commit()
        data = {"sid": sid, "bid": secrets.token_urlsafe(16), "csrf_token": raw, "_permanent": True}
        cookie = self.app.session_interface.get_signing_serializer(self.app).dumps(data)
        return cookie, self.csrf.dumps(raw)


@pytest.fixture(scope="module")
def sweep_app(settings):
    app = separate_app(settings)
    limiter.init_app(app)
    return app


@pytest.fixture
def world(sweep_app, restore_keys):
    app = sweep_app
    catalog = make_catalog(credits=3)
    admin = make_member(tier="pro", role=Role.ADMIN, profile_id=catalog.mine)
    client, _ = make_client()
    key, key_value = make_key(plan="scale", owner=admin)
    roster = make_roster(admin, profiles=(catalog.mine,))
    login = LoginSession(
        session_hash=sha256_hex("x"), user_id=admin.id, auth_time=utcnow(), expires_at=utcnow() + timedelta(hours=1)
    )
    db.session.add(login)
    db.session.commit()
    from app.services.billing.ledger import account_for

    account_for(admin)  # the admin's billing account (make_key funded it): its pages are swept too
    db.session.commit()
    kid = db.session.scalars(select(SigningKey.kid)).first()
    from app.models import Track

    track_id = db.session.scalars(select(Track.id)).first()
    world = World(
        app=app,
        good={
            "client_id": client.client_id,
            "key_id": key.id,
            "user_id": admin.id,
            "kid": kid,
            "profile_id": catalog.mine,
            "id_key": "id",
            "id_value": track_id,
            "session_id": str(login.id),
            "passkey_id": "1",
            "roster_id": roster.id,
            "name": "integrating",  # a developer guide's page (/docs/<name>)
            "account_id": account_for(admin).id,
            "month_text": utcnow().strftime("%Y-%m"),
        },
        key_value=key_value,
        key_id=key.id,
        access_token=mint_token(admin, client),
        member_id=admin.id,
        names=read_parameter_names(),
        csrf=URLSafeTimedSerializer(app.secret_key, salt="wtf-csrf-token"),
    )

    def after_execute(conn, cursor, statement, parameters, context, executemany):
        verb = statement.lstrip().split(" ", 1)[0].upper()
        changed = verb == "INSERT" or (verb in ("UPDATE", "DELETE") and cursor.rowcount > 0)
        # Refused sign-ins are audited, and a key's refused requests are kept for its console page.
        if (
            world.recording
            and changed
            and not any(f"INTO {t}" in statement for t in ("audit_events", "api_key_requests"))
        ):
            world.pending.append(statement.split("\n")[0][:100])

    def on_commit(conn):
        if world.recording:
            world.writes.extend(world.pending)
        world.pending.clear()

    def on_rollback(conn):
        world.pending.clear()

    event.listen(Engine, "after_cursor_execute", after_execute)
    event.listen(Engine, "commit", on_commit)
    event.listen(Engine, "rollback", on_rollback)
    yield world
    event.remove(Engine, "after_cursor_execute", after_execute)
    event.remove(Engine, "commit", on_commit)
    event.remove(Engine, "rollback", on_rollback)
    limiter.reset()


def routes() -> list[tuple[str, str]]:
    from app import create_app

    app = create_app({"APP_ENV": "development", "DATABASE_URL": "sqlite://", "SECRET_KEY": "s" * 40})
    return sorted(
        (rule.rule, method)
        for rule in app.url_map.iter_rules()
        if rule.rule not in SKIPPED_RULES
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"})
    )


def build_path(rule: str, values: dict[str, str]) -> str:
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", lambda m: values[m.group(1)], rule)


def variables(rule: str) -> list[str]:
    return re.findall(r"<(?:[a-z]+:)?([a-z_]+)>", rule)


def encoded(value: str | bytes) -> str:
    if isinstance(value, bytes):
        return "".join(f"%{b:02X}" for b in value)
    return quote(value, safe="", errors="surrogatepass")


def cases(world: World, rule: str, method: str):
    """(label, path, query string, body, content type) for every malformed kind this route takes."""
    good_path = build_path(rule, {name: quote(value, safe="") for name, value in world.good.items()})
    for name in variables(rule):
        for kind, value in PATH_KINDS.items():
            yield f"path {name}: {kind}", build_path(rule, {**world.good, name: value}), "", None, None
    for kind, value in VALUE_KINDS.items():
        pairs = "&".join(f"{name}={encoded(value)}" for name in world.names)
        if method == "GET":
            yield f"query: {kind}", good_path, pairs, None, None
        else:
            yield f"form: {kind}", good_path, "", pairs, "application/x-www-form-urlencoded"
    if method != "GET":
        for kind, body in JSON_KINDS.items():
            yield f"JSON: {kind}", good_path, "", body, "application/json"


def callers(world: World, rule: str) -> list[tuple[str, dict[str, str]]]:
    """Who sends the request: an API key and an access token on the data APIs; a signed-in admin
    (the session cookie is set per request) everywhere else."""
    if rule.startswith(("/v1/", "/embed/v1/")):
        return [
            ("api key", {"x-api-key": world.key_value}),
            ("access token", {"Authorization": f"Bearer {world.access_token}"}),
        ]
    return [("signed-in admin", {})]


def metered(world: World) -> int:
    db.session.expire_all()
    return db.session.scalar(select(func.coalesce(func.sum(ApiUsage.count), 0)).where(ApiUsage.key_id == world.key_id))


def problems_with(response, path: str) -> str | None:
    """What is wrong with this answer for this caller, or None."""
    status, content_type = response.status_code, response.headers.get("Content-Type", "")
    if status >= 500:
        return f"{status}"
    if path.startswith(API):
        body = response.get_json(silent=True)
        if not isinstance(body, dict):
            return f"{status} without a JSON body"
        if status < 400:
            return None if body.get("result") == "ok" else f"{status} without the success envelope"
        envelope = body.get("result") == "error" and body.get("code") == status and isinstance(body.get("message"), str)
        gateway = set(body) == {"message", "request_id"}
        return None if envelope or gateway else f"{status} in neither the API envelope nor the gateway's: {body}"
    if path.startswith(MACHINE) and status >= 400:
        body = response.get_json(silent=True)
        return None if isinstance(body, dict) and "error" in body else f"{status} without OAuth error JSON"
    if status >= 400 and "text/html" not in content_type and not path.startswith("/api/auth/oauth2/userinfo"):
        if path.startswith(("/.well-known/", "/api/auth/jwks", "/healthz", "/readyz", "/metrics")):
            return None
        return f"{status} is not the error page ({content_type})"
    if 300 <= status < 400:
        location = response.headers.get("Location", "")
        if not (location.startswith("/") and not location.startswith("//")) and not location.startswith(
            ("http://localhost/", "http://127.0.0.1:7199/")
        ):
            return f"redirect to {location!r}"
    return None


def is_call(response, path: str) -> bool:
    """An answer the meter counts: data, or a lookup that matched nothing."""
    if not path.startswith(API):
        return False
    body = response.get_json(silent=True) or {}
    return response.status_code == 200 or (response.status_code == 404 and body.get("result") == "error")


@pytest.mark.parametrize(("rule", "method"), routes(), ids=lambda value: value)
def test_malformed_input_is_a_clear_refusal_that_changes_nothing(world, rule, method):
    failures = []
    for who, headers in callers(world, rule):
        for label, path, query, body, content_type in cases(world, rule, method):
            limiter.reset()  # the sweep is about input, not budgets
            client = world.app.test_client()
            request_headers = dict(headers)
            data = body
            if who == "signed-in admin":
                cookie, csrf_value = world.signed_in()
                client.set_cookie("credits_id_session", cookie)
                request_headers["X-CSRFToken"] = csrf_value
                if content_type == "application/x-www-form-urlencoded":
                    data = f"{body}&csrf_token={csrf_value}"
            before = metered(world)
            world.writes.clear()
            world.recording = True
            try:
                response = client.open(
                    path,
                    method=method,
                    query_string=query,
                    data=data,
                    content_type=content_type,
                    headers=request_headers,
                )
            finally:
                world.recording = False
            problem = problems_with(response, path)
            refused = response.status_code >= 400 and not is_call(response, path)
            if problem is None and refused and metered(world) != before:
                problem = f"{response.status_code} but metered"
            if problem is None and refused and world.writes:
                problem = f"{response.status_code} but wrote {world.writes}"
            if problem:
                failures.append(f"{who}, {label}: {problem}")
    assert not failures, f"{method} {rule}:\n" + "\n".join(failures)


# -- the cases the issue names, one by one ----------------------------------------------------------


def search(world: World, body: str | bytes):
    return world.app.test_client().post(
        "/v1/search", data=body, content_type="application/json", headers={"x-api-key": world.key_value}
    )


@pytest.mark.parametrize("body", ['{"keyword": "\\ud800"}', b'{"keyword": "\xed\xa0\x80"}'], ids=["escaped", "raw"])
def test_a_lone_surrogate_in_a_search_keyword_is_refused_and_not_metered(world, body):
    response = search(world, body)
    assert response.status_code == 400
    assert response.get_json() == {
        "result": "error",
        "code": 400,
        "message": "Invalid parameters supplied",
        "param": "body",  # not I-JSON: the body is not read at all
    }
    assert metered(world) == 0


def test_only_answered_calls_are_metered(world):
    """Data is a call, and so is a lookup that matched nothing (404); refused input is not."""
    headers = {"x-api-key": world.key_value}
    web = world.app.test_client()
    assert search(world, '{"keyword": "a", "keyword": "b"}').status_code == 400
    assert web.get(f"/v1/profile/{world.good['profile_id']}/credits?limit=51", headers=headers).status_code == 400
    assert metered(world) == 0
    assert search(world, '{"keyword": "caf\\u00e9"}').status_code == 200
    assert web.get("/v1/album/upc/000", headers=headers).status_code == 404
    assert metered(world) == 2


def test_a_session_number_past_64_bits_is_not_found_and_ends_nothing(world):
    web = world.app.test_client()
    cookie, csrf_value = world.signed_in()
    web.set_cookie("credits_id_session", cookie)
    response = web.post(f"/account/sessions/{2**64}/sign-out", data={"csrf_token": csrf_value})
    assert response.status_code == 404 and "text/html" in response.headers["Content-Type"]
    db.session.expire_all()
    assert db.session.scalar(select(func.count()).where(LoginSession.ended_at.is_not(None))) == 0
