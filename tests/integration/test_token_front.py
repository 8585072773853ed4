"""A relying party's token request is answered at the WSGI front (app/protocol/front.py,
token_endpoint.py), before Flask: the same status, body and headers as the Flask route, the same
access line, metrics and request id; anything unusual is still Flask's, body and budget intact."""

from __future__ import annotations

import base64
import io
import json
import logging
from urllib.parse import urlencode

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from app import create_app
from app.core.extensions import db
from app.core.logs import member_hash
from app.core.metrics import REQUESTS
from app.models import Token
from app.protocol import token_endpoint
from app.protocol.front import Front
from tests.factories import REDIRECT_URI
from tests.integration.test_query_counts import TOKEN, Member

FORM = "application/x-www-form-urlencoded"


@pytest.fixture(scope="module")
def front_app(settings):
    """A second app over the test database: each request gets its own app context, as in production."""
    return create_app({k: v for k, v in settings.items() if not k.startswith("_")})


@pytest.fixture
def member(front_app):
    return Member(front_app)


def without(response, *names: str) -> dict:
    return {k: v for k, v in response.headers.items() if k not in {"X-Request-Id", *names}}


def code_of(member: Member) -> tuple[str, str]:
    """A fresh code and its verifier, from a fresh sign-in (the login page each time)."""
    member.browser._cookies.clear()
    return member.sign_in()


def exchange_form(code: str, verifier: str) -> dict:
    return {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "code_verifier": verifier}


def test_an_exchange_at_the_front_answers_as_the_flask_route_does(member):
    front = member.exchange(*code_of(member))
    flask_route = member.rp.post(TOKEN + "?via=flask", headers=member.basic, data=exchange_form(*code_of(member)))
    assert front.status_code == flask_route.status_code == 200
    assert front.get_json().keys() == flask_route.get_json().keys() >= {"access_token", "id_token", "refresh_token"}
    assert without(front, "Content-Length") == without(flask_route, "Content-Length")
    assert front.headers["Content-Length"] == str(len(front.data))
    assert (front.headers["Cache-Control"], front.headers["Pragma"]) == ("no-store", "no-cache")
    assert front.headers["X-Content-Type-Options"] == "nosniff"
    refreshed = member.refresh(front.get_json()["refresh_token"])
    assert refreshed.status_code == 200 and refreshed.get_json()["access_token"] != front.get_json()["access_token"]


REFUSALS = {
    "a wrong secret": ({"Authorization": "Basic " + base64.b64encode(b"nobody:wrong").decode()}, None),
    "an unknown code": (None, {"grant_type": "authorization_code", "code": "nope", "redirect_uri": REDIRECT_URI}),
    "no grant type": (None, {"code": "nope"}),
    "an unknown grant type": (None, {"grant_type": "password", "username": "a", "password": "b"}),
    "client credentials twice": (None, {"grant_type": "refresh_token", "refresh_token": "x", "client_secret": "s"}),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_a_refusal_at_the_front_is_the_flask_routes_refusal(member, case):
    headers, form = REFUSALS[case]
    headers = headers or member.basic
    form = form or {"grant_type": "refresh_token", "refresh_token": "unknown"}
    front = member.rp.post(TOKEN, headers=headers, data=form)
    flask_route = member.rp.post(TOKEN + "?via=flask", headers=headers, data=form)
    assert 400 <= front.status_code < 500
    assert (front.status_code, front.data) == (flask_route.status_code, flask_route.data)
    assert without(front) == without(flask_route)


def test_past_its_budget_the_client_gets_the_same_429_from_either(member, front_app, monkeypatch):
    monkeypatch.setitem(front_app.config, "TOKEN_CLIENT_LIMIT", "1 per minute")
    form = {"grant_type": "refresh_token", "refresh_token": "unknown"}
    assert member.rp.post(TOKEN, headers=member.basic, data=form).status_code == 400
    front = member.rp.post(TOKEN, headers=member.basic, data=form)
    flask_route = member.rp.post(TOKEN + "?via=flask", headers=member.basic, data=form)
    assert front.status_code == flask_route.status_code == 429
    assert front.data == flask_route.data and front.get_json()["error"] == "slow_down"
    assert without(front, "Retry-After") == without(flask_route, "Retry-After")
    assert 1 <= int(front.headers["Retry-After"]) <= 60
    assert (front.headers["Cache-Control"], front.headers["Pragma"]) == ("no-store", "no-cache")


def environ_for(member: Member, form: dict, **extra) -> dict:
    body = urlencode(form).encode()
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": TOKEN,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "wsgi.url_scheme": "http",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": FORM,
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_AUTHORIZATION": member.basic["Authorization"],
        "wsgi.input": io.BytesIO(body),
        **extra,
    }


def call(front: Front, environ: dict) -> tuple[list, bytes]:
    statuses: list = []
    body = b"".join(front(environ, lambda status, headers: statuses.append((status, dict(headers)))))
    return statuses, body


def test_the_front_answers_without_flask(front_app, member):
    def flask_must_not_run(environ, start_response):
        raise AssertionError("handed to Flask")

    front = Front(front_app, flask_must_not_run, token_endpoint.answerers(front_app))
    code, verifier = code_of(member)
    for expected in ("200 OK", "400 BAD REQUEST"):  # the second use of the code is refused, at the front
        statuses, body = call(front, environ_for(member, exchange_form(code, verifier)))
        assert [status for status, _ in statuses] == [expected]
        assert statuses[0][1]["Content-Length"] == str(len(body))
    assert b'"invalid_grant"' in body


def test_unusual_requests_go_to_flask_with_their_body(front_app, member):
    seen: list[tuple[str, bytes]] = []

    def flask(environ, start_response):
        seen.append((environ.get("REQUEST_METHOD"), environ["wsgi.input"].read()))
        start_response("400 BAD REQUEST", [])
        return [b"flask"]

    front = Front(front_app, flask, token_endpoint.answerers(front_app))
    form = {"grant_type": "refresh_token", "refresh_token": "unknown"}
    body = urlencode(form).encode()
    nul = {"grant_type": "refresh_token", "refresh_token": "a\x00b"}
    cases = [
        environ_for(member, form, REQUEST_METHOD="GET"),
        environ_for(member, form, REQUEST_METHOD="OPTIONS", HTTP_ORIGIN="https://spa.example"),
        environ_for(member, form, HTTP_ORIGIN="https://spa.example"),  # CORS: Flask's hook
        environ_for(member, form, QUERY_STRING="client_secret=s"),
        environ_for(member, form, CONTENT_TYPE="application/json"),
        environ_for(member, form, CONTENT_LENGTH=""),  # chunked
        environ_for(member, form, CONTENT_LENGTH=str(2 * 1024 * 1024)),  # past MAX_CONTENT_LENGTH
        environ_for(member, nul),  # Flask's hook refuses it with its own 400
    ]
    for environ in cases:
        assert call(front, environ)[1] == b"flask"
    assert len(seen) == len(cases)
    assert seen[2][1] == body  # the body Flask reads is the body that came
    assert seen[-1][1] == urlencode(nul).encode()  # also when the front had read and parsed it


def test_a_database_error_at_the_front_spends_nothing_and_flask_answers(front_app, member, monkeypatch):
    """The front's transaction rolls back (the code is not spent) and Flask's route runs the
    request again, counted once against the client's budget."""
    monkeypatch.setitem(front_app.config, "TOKEN_CLIENT_LIMIT", "1 per minute")
    codes = front_app.extensions["credits_id.store"].codes
    real, calls = codes.redeem, []

    def fails_once(code, client_pk, successor):
        calls.append(code)
        if len(calls) == 1:
            raise OperationalError("UPDATE", {}, Exception("server closed the connection"))
        return real(code, client_pk, successor)

    monkeypatch.setattr(codes, "redeem", fails_once)
    response = member.exchange(*code_of(member))
    assert response.status_code == 200, response.get_json()
    assert len(calls) == 2
    issued = db.session.scalar(select(func.count()).select_from(Token).where(Token.user_id == member.member.id))
    assert issued == 1


def test_the_front_writes_the_access_line_and_counts_the_request(member, caplog):
    before = REQUESTS.labels("oauth.token", "POST", "200")._value.get()
    with caplog.at_level(logging.INFO, logger="credits_id.access"):
        front = member.rp.post(
            TOKEN, headers={**member.basic, "X-Request-Id": "lb-7f3a.43"}, data=exchange_form(*code_of(member))
        )
        member.rp.post(TOKEN + "?via=flask", headers=member.basic, data=exchange_form(*code_of(member)))
    assert front.headers["X-Request-Id"] == "lb-7f3a.43"
    lines = [r for r in caplog.records if r.name == "credits_id.access" and r.path == TOKEN]
    at_front, at_flask = lines
    assert (at_front.method, at_front.endpoint, at_front.status, at_front.request_id) == (
        "POST",
        "oauth.token",
        200,
        "lb-7f3a.43",
    )
    assert (at_front.client_id, at_front.member) == (at_flask.client_id, at_flask.member) != (None, None)
    assert at_front.client_id == member.client_id
    with member.browser.application.app_context():
        assert at_front.member == member_hash(member.member.id) != member.member.id
    assert REQUESTS.labels("oauth.token", "POST", "200")._value.get() == before + 2


def test_an_event_logged_at_the_front_carries_the_request_id(member, caplog):
    code, verifier = code_of(member)
    assert member.exchange(code, verifier).status_code == 200
    with caplog.at_level(logging.INFO, logger="credits_id.events"):
        replay = member.rp.post(
            TOKEN, headers={**member.basic, "X-Request-Id": "replay-1"}, data=exchange_form(code, verifier)
        )
    assert replay.status_code == 400 and replay.headers["X-Request-Id"] == "replay-1"
    (event,) = [r for r in caplog.records if r.getMessage() == "reuse detected, grant revoked"]
    assert event.request_id == "replay-1"


def test_every_token_answer_is_given_at_the_front_on_one_unit_of_work(front_app, member, monkeypatch):
    """An exchange, a refresh, a retry within the grace window, a replayed refresh token and a
    replayed code: each answered at the front (Flask never runs), its writes on the request's Core
    unit of work (a write on any other connection would be refused and hand the request to Flask),
    and the replays' revocations committed although the requests are refused."""
    monkeypatch.setitem(front_app.config, "REFRESH_GRACE_SECONDS", 30)

    def flask_must_not_run(environ, start_response):
        raise AssertionError("handed to Flask")

    front = Front(front_app, flask_must_not_run, token_endpoint.answerers(front_app))

    def answer(form: dict) -> tuple[str, dict]:
        statuses, body = call(front, environ_for(member, form))
        return statuses[0][0], json.loads(body)

    code, verifier = code_of(member)
    status, first = answer(exchange_form(code, verifier))
    assert status == "200 OK"
    rotate = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]}
    status, second = answer(rotate)
    assert status == "200 OK" and second["refresh_token"] != first["refresh_token"]
    assert answer(rotate) == ("200 OK", second)  # a retry within the window: the first answer again
    monkeypatch.setitem(front_app.config, "REFRESH_GRACE_SECONDS", 0)
    assert answer(rotate)[1]["error"] == "invalid_grant"  # a replay: the family is revoked
    live = select(func.count()).select_from(Token).where(Token.user_id == member.member.id, Token.revoked_at.is_(None))
    with db.engine.connect() as conn:  # what another connection sees: committed
        assert conn.scalar(live) == 0
    code, verifier = code_of(member)
    assert answer(exchange_form(code, verifier))[0] == "200 OK"
    assert answer(exchange_form(code, verifier))[1]["error"] == "invalid_grant"  # the code again
    with db.engine.connect() as conn:
        assert conn.scalar(live) == 0
