"""Getting real tokens from the live server for the security tests: a member signs in to a fresh
app through the real pages, and the app redeems the code."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import requests
from joserfc import jwt
from joserfc.jwk import RSAKey

from app.models import Client, User
from app.protocol.jwks import keystore
from tests.factories import make_client, make_member
from tests.flows import Browser, RelyingParty, sign_in

OFFLINE = "openid profile email offline_access"


@dataclass
class Issued:
    member: User
    client: Client
    rp: RelyingParty
    browser: Browser
    body: dict

    def __post_init__(self) -> None:
        # Plain copies: tests call db_state(), which ends the session the rows belong to.
        self.client_id = self.client.client_id
        self.sub = self.member.sub

    @property
    def access_token(self) -> str:
        return self.body["access_token"]

    @property
    def refresh_token(self) -> str:
        return self.body["refresh_token"]

    @property
    def id_token(self) -> str:
        return self.body["id_token"]


def issue(
    base: str,
    scope: str = OFFLINE,
    member: User | None = None,
    client: tuple | None = None,
    browser: Browser | None = None,
    **client_kw,
) -> Issued:
    member = member or make_member()
    client_row, secret = client or make_client(**client_kw)
    rp = RelyingParty(base, client_row.client_id, secret)
    params, browser = sign_in(base, rp, member.email, scope=scope, browser=browser)
    response = rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    return Issued(member, client_row, rp, browser, response.json())


def post_as(base: str, path: str, client_id: str, secret: str | None, data: dict) -> requests.Response:
    """A client-authenticated POST (Basic for confidential clients, client_id for public ones)."""
    if secret is None:
        return requests.post(base + path, data={**data, "client_id": client_id}, timeout=30)
    return requests.post(base + path, data=data, auth=(client_id, secret), timeout=30)


def jwt_claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def jwt_header(token: str) -> dict:
    header = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))


def mint_id_token(claims: dict, key: RSAKey | None = None, kid: str | None = None) -> str:
    """An ID token signed by the provider's active key (or by `key`): e.g. an expired one, or
    one naming another member."""
    if key is None:
        kid, key = keystore.signing_key()
    return jwt.encode({"alg": "RS256", "kid": kid or "unknown"}, claims, key)


def separate_app(settings: dict, **overrides):
    """Another app instance over the test database, for Flask test-client requests.

    The suite's autouse fixture keeps the session app's context pushed, and Flask reuses an
    active context of the *same* app for test-client requests - so `g` (CSRF token, current
    login) would leak from one request to the next. Requests to another app instance get fresh
    contexts, as in production."""
    from app import create_app
    from tests.conftest import IN_PROCESS

    return create_app({**{k: v for k, v in settings.items() if not k.startswith("_")}, **IN_PROCESS, **overrides})
