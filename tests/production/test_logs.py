"""Structured logs: every line the server writes is JSON; every line written while serving a
request carries its id (an incoming X-Request-Id when it looks like one, echoed back); each
request ends with an access line; no secret, code, token, password or email is ever logged."""

from __future__ import annotations

import json
import logging
import re
import secrets

import pytest
import requests

from app import create_app
from app.core.logs import member_hash
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import USERINFO, Browser, RelyingParty, sign_in


def server_lines(live_server) -> list[dict]:
    """The JSON lines of the shared live server's output (a stray plain line from a library is
    skipped here; test_multiprocess holds its own servers' output to all-JSON)."""
    lines = []
    for line in live_server.log_text().splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue
    return lines


def test_request_id_is_echoed_or_made(live_server):
    response = requests.get(live_server("/healthz"), headers={"X-Request-Id": "lb-7f3a.42"}, timeout=30)
    assert response.headers["X-Request-Id"] == "lb-7f3a.42"
    made = requests.get(live_server("/healthz"), timeout=30).headers["X-Request-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    # Something that is not an id (spaces, quotes, too long) is replaced, never copied to the logs.
    for bad in ('x" injected="1', "a" * 200, "two words"):
        echoed = requests.get(live_server("/healthz"), headers={"X-Request-Id": bad}, timeout=30).headers[
            "X-Request-Id"
        ]
        assert re.fullmatch(r"[0-9a-f]{32}", echoed)
    assert "injected" not in live_server.log_text()


def test_a_sign_in_is_logged_without_secrets(live_server, app):
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    flow_id = "flow-" + secrets.token_hex(6)
    browser = Browser(live_server.url)
    browser.session.headers["X-Request-Id"] = flow_id
    browser.authorize(rp.auth_params(scope="openid profile offline_access"))
    assert browser.login(member.email, password="wrong password").status_code == 401
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile offline_access", browser=browser)
    tokens = rp.exchange(params["code"]).json()
    info = requests.get(
        live_server(USERINFO),
        timeout=30,
        headers={"Authorization": f"Bearer {tokens['access_token']}", "X-Request-Id": flow_id + "-ui"},
    )
    assert info.status_code == 200

    lines = server_lines(live_server)
    mine = [line for line in lines if str(line.get("request_id", "")).startswith(flow_id)]
    access = [line for line in mine if line["logger"] == "credits_id.access"]
    events = [line["message"] for line in mine if line["logger"] == "credits_id.events"]
    assert events == ["login failed", "login succeeded", "consent granted"]
    # Every line written during a request carries that request's id (access and event lines
    # are only ever written during one).
    assert all("request_id" in line for line in lines if line["logger"].startswith("credits_id."))

    login_failed = next(line for line in access if line["endpoint"] == "auth.login" and line["status"] == 401)
    assert login_failed["method"] == "POST" and login_failed["path"] == "/login" and login_failed["member"] is None
    userinfo = next(line for line in access if line["request_id"] == flow_id + "-ui")
    with app.test_request_context():
        expected_hash = member_hash(member.id)
    assert userinfo == {
        **userinfo,
        "endpoint": "oauth.userinfo",
        "status": 200,
        "client_id": client.client_id,
        "member": expected_hash,
    }
    assert isinstance(userinfo["latency_ms"], float) and userinfo["latency_ms"] >= 0
    consent = next(line for line in access if line["endpoint"] == "consent.decide")
    assert consent["member"] == expected_hash and consent["client_id"] == client.client_id

    # The token request of this flow was not sent with our id; find it by client and status.
    assert any(
        line["endpoint"] == "oauth.token"
        and line["client_id"] == client.client_id
        and line["member"] == expected_hash
        and line["status"] == 200
        for line in lines
        if line["logger"] == "credits_id.access"
    )

    text = live_server.log_text()
    for leaked in (
        secret,
        PASSWORD,
        "wrong password",
        params["code"],
        tokens["access_token"],
        tokens["refresh_token"],
        tokens["id_token"],
        member.email,
        member.id,
        rp.verifier,
        *browser.session.cookies.get_dict().values(),
    ):
        assert leaked not in text, f"a secret value reached the log: {leaked[:12]}..."
    assert "code_challenge" not in text and "?" not in "".join(line.get("path", "") for line in lines)


@pytest.mark.parametrize("hops,expected", [(0, "127.0.0.1"), (1, "203.0.113.9")])
def test_client_address_behind_trusted_proxies(app, settings, caplog, hops, expected):
    """X-Forwarded-For is believed only for TRUSTED_PROXY_HOPS proxies (ProxyFix)."""
    proxied = create_app({**{k: v for k, v in settings.items() if not k.startswith("_")}, "TRUSTED_PROXY_HOPS": hops})
    with caplog.at_level(logging.INFO, logger="credits_id.access"):
        proxied.test_client().get(
            "/healthz",
            environ_base={"REMOTE_ADDR": "127.0.0.1"},
            headers={"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"},
        )
    record = next(r for r in caplog.records if r.name == "credits_id.access")
    assert record.remote_addr == expected and record.path == "/healthz"


def test_development_server_logs_no_query_string(app, caplog):
    """`make run` serves with Werkzeug's development server, whose own request line would carry
    the query string (an id_token_hint, a login_hint): only our access line (path only) is kept."""
    import threading

    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with caplog.at_level(logging.INFO):
            response = requests.get(f"http://127.0.0.1:{server.port}/healthz?id_token_hint=SECRET-HINT-42", timeout=30)
    finally:
        server.shutdown()
        thread.join(timeout=10)
    assert response.status_code == 200
    assert "SECRET-HINT-42" not in caplog.text
    assert any(r.name == "credits_id.access" and r.path == "/healthz" for r in caplog.records)
