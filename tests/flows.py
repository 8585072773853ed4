"""A relying party and a member's browser, over real HTTP (requests), for the live server.

The browser keeps cookies and follows the provider's own pages; it stops at the first redirect
to the relying party's redirect_uri, as a real browser hands control back to the app there."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass, field
from html import unescape
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

from tests.factories import PASSWORD, REDIRECT_URI

AUTHORIZE = "/api/auth/oauth2/authorize"
TOKEN = "/api/auth/oauth2/token"
USERINFO = "/api/auth/oauth2/userinfo"
JWKS = "/api/auth/jwks"


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def csrf_token(html: str) -> str:
    match = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html) or re.search(
        r'value="([^"]+)"[^>]*name="csrf_token"', html
    )
    assert match, "page has no CSRF token"
    return unescape(match.group(1))


def hidden(html: str, name: str) -> str | None:
    match = re.search(rf'name="{name}"[^>]*value="([^"]*)"', html)
    return unescape(match.group(1)) if match else None


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


@dataclass
class Browser:
    base: str
    session: requests.Session = field(default_factory=requests.Session)
    last: requests.Response | None = None

    def get(self, url: str, **kw) -> requests.Response:
        self.last = self.session.get(urljoin(self.base, url), allow_redirects=False, **kw)
        return self.last

    def post(self, url: str, **kw) -> requests.Response:
        self.last = self.session.post(urljoin(self.base, url), allow_redirects=False, **kw)
        return self.last

    def follow(self, response: requests.Response, stop_at: str = REDIRECT_URI) -> requests.Response:
        """Follow redirects on the provider; stop at the app's redirect_uri (or any other site)."""
        while response.status_code in (301, 302, 303, 307):
            location = urljoin(response.url, response.headers["Location"])
            if not location.startswith(self.base):
                return response
            response = self.get(location)
        return response

    def authorize(self, params: dict, method: str = "GET") -> requests.Response:
        if method == "POST":
            return self.follow(self.post(AUTHORIZE, data=params))
        return self.follow(self.get(AUTHORIZE, params=params))

    def login(self, email: str, password: str = PASSWORD) -> requests.Response:
        page = self.last
        assert page is not None and 'type="password"' in page.text, "not on the login page"
        data = {
            "csrf_token": csrf_token(page.text),
            "email": email,
            "password": password,
            "interaction": hidden(page.text, "interaction") or "",
            "next": hidden(page.text, "next") or "",
        }
        return self.follow(self.post("/login", data=data))

    def consent(self, allow: bool = True, scopes: list[str] | None = None) -> requests.Response:
        page = self.last
        assert page is not None and 'name="decision"' in page.text, "not on the consent page"
        ticked = scopes if scopes is not None else re.findall(r'name="scope" value="([^"]+)" checked', page.text)
        data = {
            "csrf_token": csrf_token(page.text),
            "interaction": hidden(page.text, "interaction"),
            "decision": "allow" if allow else "deny",
            "scope": ticked,
        }
        return self.follow(self.post("/consent", data=data))


@dataclass
class RelyingParty:
    """The app's side: builds authorization requests and redeems codes."""

    base: str
    client_id: str
    client_secret: str | None = None
    redirect_uri: str = REDIRECT_URI
    verifier: str = ""

    def auth_params(self, scope: str = "openid profile email", **extra) -> dict:
        self.verifier, challenge = pkce_pair()
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": scope,
            "state": secrets.token_urlsafe(8),
            "nonce": secrets.token_urlsafe(8),
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        params.update(extra)
        return {k: v for k, v in params.items() if v is not None}

    def token_request(self, data: dict, auth: str = "basic") -> requests.Response:
        data = dict(data)
        kwargs = {}
        if self.client_secret and auth == "basic":
            kwargs["auth"] = (self.client_id, self.client_secret)
        elif self.client_secret and auth == "post":
            data.update(client_id=self.client_id, client_secret=self.client_secret)
        else:
            data.setdefault("client_id", self.client_id)
        return requests.post(self.base + TOKEN, data=data, timeout=30, **kwargs)

    def exchange(self, code: str, verifier: str | None = None, **extra) -> requests.Response:
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier if verifier is not None else self.verifier,
            **extra,
        }
        return self.token_request({k: v for k, v in data.items() if v is not None})

    def refresh(self, refresh_token: str, **extra) -> requests.Response:
        return self.token_request({"grant_type": "refresh_token", "refresh_token": refresh_token, **extra})


def sign_in(
    base: str,
    rp: RelyingParty,
    email: str,
    scope: str = "openid profile email",
    browser: Browser | None = None,
    **extra,
) -> tuple[dict, Browser]:
    """The whole front channel: authorize, login, consent; returns the callback's parameters."""
    browser = browser or Browser(base)
    response = browser.authorize(rp.auth_params(scope=scope, **extra))
    if response.status_code == 200 and 'type="password"' in response.text:
        response = browser.login(email)
    if response.status_code == 200 and 'name="decision"' in response.text:
        response = browser.consent(allow=True)
    assert response.status_code == 302, response.text[:500]
    location = response.headers["Location"]
    assert location.startswith(rp.redirect_uri), location
    return query(location), browser
