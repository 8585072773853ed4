"""Userinfo's common case is answered at the WSGI front (app/protocol/front.py, userinfo.py), before
Flask: the same status, body and headers as Authlib's endpoint in the Flask route, the same access
line and metrics; every error and anything unusual is still Flask's to answer."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.exc import OperationalError

from app import create_app
from app.core.extensions import db
from app.core.logs import member_hash
from app.core.metrics import REQUESTS
from app.models import Client, ClientStatus, Token
from app.models.base import utcnow
from app.protocol import tokens, userinfo
from app.protocol.front import Front
from tests.integration.test_query_counts import USERINFO, Member, shape, statements


@pytest.fixture(scope="module")
def front_app(settings):
    """A second app over the test database: each request gets its own app context, as in production."""
    return create_app({k: v for k, v in settings.items() if not k.startswith("_")})


@pytest.fixture
def signed_in(front_app):
    m = Member(front_app)
    m.tokens = m.exchange(*m.sign_in()).get_json()
    m.bearer = {"Authorization": f"Bearer {m.tokens['access_token']}"}
    return m


def without_request_id(response) -> dict:
    return {k: v for k, v in response.headers.items() if k != "X-Request-Id"}


def call(front: Front, environ: dict) -> tuple[list, bytes]:
    statuses: list = []
    body = b"".join(front(environ, lambda status, headers: statuses.append((status, dict(headers)))))
    return statuses, body


def environ_for(bearer: str, **extra) -> dict:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": USERINFO,
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_AUTHORIZATION": bearer,
        **extra,
    }


@pytest.mark.parametrize("origin", [None, "https://spa.example"])
def test_front_answers_as_authlibs_endpoint_does(signed_in, origin):
    headers = {**signed_in.bearer, **({"Origin": origin} if origin else {})}
    front = signed_in.rp.get(USERINFO, headers=headers)
    flask_route = signed_in.rp.get(USERINFO + "?via=flask", headers=headers)  # a query string: Flask's
    assert front.status_code == flask_route.status_code == 200
    assert front.data == flask_route.data
    assert front.get_json()["email"] == signed_in.member.email
    assert without_request_id(front) == without_request_id(flask_route)
    assert front.headers["Cache-Control"] == "no-store" and front.headers["X-Content-Type-Options"] == "nosniff"
    assert (front.headers.get("Access-Control-Allow-Origin") == "*") == bool(origin)


def test_front_answers_without_flask(front_app, signed_in):
    def flask_must_not_run(environ, start_response):
        raise AssertionError("handed to Flask")

    front = Front(front_app, flask_must_not_run, userinfo.answerers(front_app))
    for scheme in ("Bearer", "bearer", "BEARER"):  # RFC 6750: the scheme is case-insensitive
        statuses, body = call(front, environ_for(f"{scheme} {signed_in.tokens['access_token']}"))
        assert [status for status, _ in statuses] == ["200 OK"]
        assert statuses[0][1]["Content-Length"] == str(len(body)) and b'"sub"' in body


def test_errors_and_unusual_requests_go_to_flask(front_app, signed_in):
    seen = []

    def flask(environ, start_response):
        seen.append(environ)
        start_response("401 UNAUTHORIZED", [])
        return [b"flask"]

    front = Front(front_app, flask, userinfo.answerers(front_app))
    good = f"Bearer {signed_in.tokens['access_token']}"
    cases = [
        environ_for(good, REQUEST_METHOD="POST"),
        environ_for(good, QUERY_STRING="a=b"),
        environ_for(good, REQUEST_METHOD="HEAD"),
        environ_for("Basic eDp5"),
        environ_for("Bearer"),
        environ_for("Bearer not-a-token"),
        environ_for("Bearer " + "x" * 600),
        {k: v for k, v in environ_for(good).items() if k != "HTTP_AUTHORIZATION"},
    ]
    for environ in cases:
        assert call(front, environ)[1] == b"flask"
    assert len(seen) == len(cases)


def revoke_all(member_id: str) -> None:
    db.session.execute(update(Token).where(Token.user_id == member_id).values(revoked_at=utcnow()))
    db.session.commit()


def expire_all(member_id: str) -> None:
    past = utcnow() - timedelta(seconds=1)
    db.session.execute(update(Token).where(Token.user_id == member_id).values(access_expires_at=past))
    db.session.commit()


def narrow_to_email(member_id: str) -> None:
    db.session.execute(update(Token).where(Token.user_id == member_id).values(scope="email"))
    db.session.commit()


def disable_app(member_id: str) -> None:
    db.session.execute(update(Client).values(status=ClientStatus.DISABLED.value))
    db.session.commit()


@pytest.mark.parametrize("change", [revoke_all, expire_all, narrow_to_email, disable_app])
def test_tokens_the_bearer_rule_refuses_get_flasks_error(signed_in, change):
    """Revoked, expired, without `openid`, or of a disabled app: declined at the front, then
    refused by the Flask route in RFC 6750's words (401 invalid_token, 403 insufficient_scope)."""
    change(signed_in.member.id)
    response = signed_in.rp.get(USERINFO, headers=signed_in.bearer)
    expected = (403, "insufficient_scope") if change is narrow_to_email else (401, "invalid_token")
    assert (response.status_code, response.get_json()["error"]) == expected
    assert f'error="{expected[1]}"' in response.headers["WWW-Authenticate"]


@pytest.mark.parametrize("change", [None, narrow_to_email])
def test_a_declined_token_is_looked_up_once(front_app, signed_in, change):
    """The front keeps its lookup in the request for the Flask route it declines to: an unknown
    or too narrow token costs one statement, as before there was a front."""
    headers = {"Authorization": "Bearer not-a-token"} if change is None else signed_in.bearer
    if change:
        change(signed_in.member.id)
    with statements(front_app) as seen:
        response = signed_in.rp.get(USERINFO, headers=headers)
    assert response.status_code == (401 if change is None else 403)
    assert [shape(s) for s in seen] == ["SELECT tokens"]


def test_a_database_error_goes_to_flask(front_app, signed_in, monkeypatch):
    """The front does not answer an outage itself: Flask's route runs the request again and
    answers in its own words (here the lookup works the second time)."""
    real = tokens.live_bearer
    calls = []

    def fails_once(value):
        calls.append(value)
        if len(calls) == 1:
            raise OperationalError("SELECT", {}, Exception("server closed the connection"))
        return real(value)

    monkeypatch.setattr(tokens, "live_bearer", fails_once)
    response = signed_in.rp.get(USERINFO, headers=signed_in.bearer)
    assert response.status_code == 200 and len(calls) == 2


def test_front_writes_the_access_line_and_counts_the_request(signed_in, caplog):
    before = REQUESTS.labels("oauth.userinfo", "GET", "200")._value.get()
    with caplog.at_level(logging.INFO, logger="credits_id.access"):
        front = signed_in.rp.get(USERINFO, headers={**signed_in.bearer, "X-Request-Id": "lb-7f3a.42"})
        signed_in.rp.get(USERINFO + "?via=flask", headers=signed_in.bearer)
    assert front.headers["X-Request-Id"] == "lb-7f3a.42"
    at_front, at_flask = (r for r in caplog.records if r.name == "credits_id.access")
    assert (at_front.method, at_front.path, at_front.endpoint, at_front.status, at_front.request_id) == (
        "GET",
        USERINFO,
        "oauth.userinfo",
        200,
        "lb-7f3a.42",
    )
    # The same app and the same keyed member hash as the Flask route's line (never the member id).
    assert (at_front.client_id, at_front.member) == (at_flask.client_id, at_flask.member)
    assert at_front.client_id == signed_in.client_id
    with signed_in.browser.application.app_context():
        assert at_front.member == member_hash(signed_in.member.id) != signed_in.member.id
    assert REQUESTS.labels("oauth.userinfo", "GET", "200")._value.get() == before + 2
