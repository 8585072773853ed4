"""Reverse proxies: with TRUSTED_PROXY_HOPS=1 the client IP and scheme come from the proxy's
X-Forwarded-* headers; with 0 (the default) those headers are ignored, so a client cannot pick
its own IP (to dodge throttling, or to poison the session record). The issuer is configuration,
never derived from Host or X-Forwarded-Host."""

from __future__ import annotations

import pytest

from app.core.extensions import db, limiter
from app.models import LoginSession
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import csrf_token, query
from tests.issued import separate_app

ISSUER = "https://id.example.test"
SPOOF = {
    "X-Forwarded-For": "6.6.6.6",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Host": "evil.example",
    "Host": "evil.example",
}


def sign_in(client, email: str, headers: dict, remote_addr: str) -> int:
    env = {"REMOTE_ADDR": remote_addr}
    page = client.get("/login", headers=headers, environ_base=env)
    response = client.post(
        "/login",
        data={"csrf_token": csrf_token(page.get_data(as_text=True)), "email": email, "password": PASSWORD},
        headers=headers,
        environ_base=env,
    )
    return response.status_code


def recorded_ip(user_id: str) -> str:
    db.session.remove()
    return db.session.scalar(db.select(LoginSession.ip).where(LoginSession.user_id == user_id))


@pytest.fixture(autouse=True)
def _counters():
    yield
    limiter.reset()


def test_without_trusted_proxies_forwarded_headers_are_ignored(settings):
    web = separate_app(settings, TRUSTED_PROXY_HOPS=0)
    client = web.test_client()
    member = make_member()
    assert sign_in(client, member.email, SPOOF, remote_addr="192.0.2.10") == 302
    assert recorded_ip(member.id) == "192.0.2.10"
    doc = client.get("/.well-known/openid-configuration", headers=SPOOF).json
    assert doc["issuer"] == settings["ISSUER_URL"]
    assert "evil.example" not in str(doc)


def test_behind_one_proxy_the_client_ip_is_the_one_the_proxy_saw(settings):
    web = separate_app(settings, ISSUER_URL=ISSUER, TRUSTED_PROXY_HOPS=1)
    client = web.test_client()
    proxy = "10.0.0.2"
    member = make_member()
    # The client sent its own X-Forwarded-For; the proxy appended the address it really saw.
    headers = {
        "X-Forwarded-For": "6.6.6.6, 198.51.100.7",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "id.example.test",
    }
    assert sign_in(client, member.email, headers, remote_addr=proxy) == 302
    assert recorded_ip(member.id) == "198.51.100.7"


def test_behind_one_proxy_the_issuer_is_still_configuration(settings):
    web = separate_app(settings, ISSUER_URL=ISSUER, TRUSTED_PROXY_HOPS=1)
    client = web.test_client()
    doc = client.get(
        "/.well-known/openid-configuration", headers={"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http"}
    ).json
    assert doc["issuer"] == ISSUER
    assert doc["authorization_endpoint"] == ISSUER + "/api/auth/oauth2/authorize"
    # An authorization error carries our issuer (RFC 9207), whatever host the request named.
    app_client, _ = make_client()
    response = client.get(
        "/api/auth/oauth2/authorize",
        query_string={
            "client_id": app_client.client_id,
            "redirect_uri": "http://127.0.0.1:7199/cb",
            "response_type": "token",
            "state": "s",
        },
        headers={"X-Forwarded-Host": "evil.example"},
    )
    params = query(response.headers["Location"])
    assert params["error"] == "unsupported_response_type" and params["iss"] == ISSUER


def test_per_ip_throttling_follows_the_trusted_ip(settings, monkeypatch):
    web = separate_app(settings, ISSUER_URL=ISSUER, TRUSTED_PROXY_HOPS=1)
    limiter.reset()
    monkeypatch.setitem(web.config, "LOGIN_IP_LIMIT", "2 per 15 minutes")
    client = web.test_client()
    behind = {"X-Forwarded-For": "198.51.100.20", "X-Forwarded-Proto": "https"}
    for i in range(2):
        page = client.get("/login", headers=behind)
        assert (
            client.post(
                "/login",
                data={
                    "csrf_token": csrf_token(page.get_data(as_text=True)),
                    "email": f"x{i}@example.test",
                    "password": "wrong-password",
                },
                headers=behind,
            ).status_code
            == 401
        )
    page = client.get("/login", headers=behind)
    token = csrf_token(page.get_data(as_text=True))
    blocked = client.post(
        "/login", data={"csrf_token": token, "email": "y@example.test", "password": "p" * 12}, headers=behind
    )
    assert blocked.status_code == 429
    # Another client behind the same proxy is a different IP.
    other = {"X-Forwarded-For": "198.51.100.21", "X-Forwarded-Proto": "https"}
    assert (
        client.post(
            "/login", data={"csrf_token": token, "email": "y@example.test", "password": "p" * 12}, headers=other
        ).status_code
        == 401
    )


def test_hops_setting_comes_from_the_environment(monkeypatch):
    from app.core.config import load_settings

    monkeypatch.setenv("TRUSTED_PROXY_HOPS", "2")
    assert load_settings({"APP_ENV": "development"})["TRUSTED_PROXY_HOPS"] == 2
