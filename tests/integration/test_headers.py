"""Security headers (app/core/security.py): CSP without inline script, unframeable pages, nosniff,
no referrer, HSTS on an https issuer, and no caching of anything that carries a secret."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.core.extensions import limiter
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import csrf_token, pkce_pair
from tests.issued import separate_app

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
AUTHORIZE = "/api/auth/oauth2/authorize"


@pytest.fixture(scope="module")
def web(settings):
    return separate_app(settings)


@pytest.fixture
def client(web):
    limiter.init_app(web)
    limiter.reset()
    return web.test_client()


def assert_html_hardened(response) -> None:
    csp = response.headers["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'" and directives["base-uri"] == "'none'"
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"


def authorize_params(client_id: str, redirect_uri: str, scope: str = "openid profile") -> dict:
    _, challenge = pkce_pair()
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": scope,
        "state": "s",
        "nonce": "n",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }


def to_consent(client, redirect_uri: str = "http://127.0.0.1:7199/cb", **client_kw):
    """authorize -> login -> consent page, through the test client; returns the consent page."""
    member = make_member()
    app_client, _ = make_client(redirect_uris=[redirect_uri], **client_kw)
    response = client.get(AUTHORIZE, query_string=authorize_params(app_client.client_id, redirect_uri))
    login_url = response.headers["Location"]
    page = client.get(login_url)
    assert_html_hardened(page)
    assert page.headers["Cache-Control"] == "no-store"
    html = page.get_data(as_text=True)
    interaction = re.search(r'name="interaction"[^>]*value="([^"]+)"', html).group(1)
    response = client.post(
        "/login",
        data={"csrf_token": csrf_token(html), "email": member.email, "password": PASSWORD, "interaction": interaction},
    )
    while response.status_code == 302 and response.headers["Location"].startswith("/"):
        response = client.get(response.headers["Location"])
    return response


def test_sign_in_and_consent_pages(client):
    login = client.get("/login")
    assert_html_hardened(login)
    assert login.headers["Cache-Control"] == "no-store"
    assert "Strict-Transport-Security" not in login.headers  # http (loopback) issuer

    consent = to_consent(client)
    assert consent.status_code == 200 and 'name="decision"' in consent.get_data(as_text=True)
    assert_html_hardened(consent)
    assert consent.headers["Cache-Control"] == "no-store"


def test_native_app_scheme_is_allowed_as_a_form_target_only_on_its_own_pages(client):
    consent = to_consent(client, redirect_uri="com.example.app:/callback", public=True)
    assert consent.status_code == 200
    csp = consent.headers["Content-Security-Policy"]
    assert "form-action 'self' http: https: com.example.app:" in csp
    assert_html_hardened(consent)
    assert "com.example.app:" not in client.get("/login").headers["Content-Security-Policy"]


def test_error_pages_and_json_endpoints(client):
    missing = client.get("/no-such-page")
    assert missing.status_code == 404
    assert_html_hardened(missing)
    untrusted = client.get(AUTHORIZE, query_string={"client_id": "unknown"})
    assert untrusted.status_code == 400
    assert_html_hardened(untrusted)
    assert untrusted.headers["Cache-Control"] == "no-store"

    for path, method in (
        ("/api/auth/oauth2/token", "post"),
        ("/api/auth/oauth2/userinfo", "get"),
        ("/api/auth/oauth2/revoke", "post"),
        ("/api/auth/oauth2/introspect", "post"),
    ):
        response = getattr(client, method)(path)
        assert response.status_code in (400, 401), path
        assert response.headers["Cache-Control"] == "no-store", path
        assert response.headers["X-Content-Type-Options"] == "nosniff", path
        assert response.mimetype == "application/json", path


def test_public_metadata_is_cacheable_for_a_while(client):
    for path in ("/.well-known/openid-configuration", "/api/auth/jwks"):
        response = client.get(path)
        assert response.headers["Cache-Control"] == "public, max-age=300"
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_templates_run_no_inline_script():
    for template in TEMPLATES.rglob("*.html"):
        html = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", html, flags=re.I):
            assert "src=" in tag, f"inline script in {template}"
        assert not re.search(r"\son[a-z]+\s*=", html, flags=re.I), f"inline event handler in {template}"
        assert "javascript:" not in html.lower(), template
        assert "<style" not in html.lower(), f"inline style block in {template}"


def test_https_issuer_adds_hsts_and_still_accepts_sign_in_without_a_referer(settings):
    """Behind a TLS-terminating proxy: HSTS everywhere, and the login form works although our
    pages send no Referer (Flask-WTF's strict referrer check would reject every POST)."""
    https_app = separate_app(settings, ISSUER_URL="https://id.example.test", TRUSTED_PROXY_HOPS=1)
    limiter.reset()
    client = https_app.test_client()
    proxied = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "id.example.test", "X-Forwarded-For": "203.0.113.5"}
    member = make_member()
    page = client.get("/login", headers=proxied, base_url="http://internal:8000")
    assert page.headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert_html_hardened(page)
    token = csrf_token(page.get_data(as_text=True))
    set_cookie = page.headers["Set-Cookie"]
    assert set_cookie.startswith("credits_id_session=")
    # SameSite=None (with Secure): an app's cross-site POST to /authorize or to the logout endpoint
    # must arrive with the member's session (OIDC Core 3.1.2.1, RP-Initiated Logout 2).
    assert "; Secure" in set_cookie and "; HttpOnly" in set_cookie and "SameSite=None" in set_cookie

    response = client.post(
        "/login",
        data={"csrf_token": token, "email": member.email, "password": PASSWORD},
        headers=proxied,
        base_url="http://internal:8000",
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:300]
    assert response.headers["Strict-Transport-Security"].startswith("max-age=")
    discovery = client.get("/.well-known/openid-configuration", headers=proxied, base_url="http://internal:8000")
    assert discovery.headers["Strict-Transport-Security"].startswith("max-age=")
