"""Issuing tokens and the one bearer rule. Every token is an opaque random string; only its SHA-256
lives in the database (Authlib's mixins would store it in plain text). The rows are read and
written by the protocol store (app/store/tokens.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app

from app.core.scopes import grantable, join, scope_list
from app.models.base import new_secret, sha256_hex, utcnow
from app.protocol.resources import accepts
from app.store import store
from app.store import tokens as stored
from app.store.members import Member


@dataclass(frozen=True, slots=True)
class NewPair:
    """An access token and, when the app may refresh, a refresh token, drawn before their row is
    written: a code exchange or a rotation stores them in the step that spends what the client
    presented (app/store/tokens.py: SpendAndStore), then answers with them."""

    access_token: str
    refresh_token: str
    with_refresh: bool  # whether the stored row holds the refresh token
    issued_at: datetime
    lifetime: int  # of the access token, in seconds

    @classmethod
    def draw(cls, with_refresh: bool) -> NewPair:
        lifetime = int(current_app.config["ACCESS_TOKEN_LIFETIME"])
        return cls(new_secret(32), new_secret(32), with_refresh, utcnow(), lifetime)

    def columns(self) -> dict[str, Any]:
        """What the row holds of the pair: hashes and times, never the tokens."""
        refresh_lifetime = timedelta(seconds=int(current_app.config["REFRESH_TOKEN_LIFETIME"]))
        return {
            "access_token_hash": sha256_hex(self.access_token),
            "refresh_token_hash": sha256_hex(self.refresh_token) if self.with_refresh else None,
            "issued_at": self.issued_at,
            "access_expires_at": self.issued_at + timedelta(seconds=self.lifetime),
            "refresh_expires_at": self.issued_at + refresh_lifetime if self.with_refresh else None,
        }

    def answer(self, scope: str | None, user: Member | None, include_refresh_token: bool) -> dict[str, Any]:
        """The token response's body (Authlib's token generator). The scope issued is what the
        member's membership includes now, not when the code or the first token was issued: after a
        downgrade a refresh no longer carries (or stores) the higher tier's scopes. A refresh token
        only when `offline_access` was granted."""
        if user is not None:
            scope = join(grantable(scope_list(scope), user.tier))
        token: dict[str, Any] = {
            "token_type": "Bearer",
            "access_token": self.access_token,
            "expires_in": self.lifetime,
            "scope": scope or "",
        }
        if include_refresh_token and self.with_refresh and "offline_access" in scope_list(scope):
            token["refresh_token"] = self.refresh_token
        return token


def bearer_value(authorization: str | None) -> str | None:
    """The access token of an `Authorization: Bearer <token>` header (RFC 6750 2.1; the scheme is
    case-insensitive), or None: how userinfo, its front and /v1 all read the header."""
    scheme, _, value = (authorization or "").partition(" ")
    value = value.strip()
    return value if scheme.lower() == "bearer" and value else None


def live_bearer(value: str | None, resource: str | None = None) -> stored.StoredToken | None:
    """The one bearer-token rule, for userinfo, the /v1 data API and the tool server alike: the
    access token `value` names, unless it is unknown, revoked or expired, its member is suspended or
    its app no longer active (StoredToken.is_barred), or it is bound to another resource than
    `resource` (RFC 8707; None: the provider's own APIs, app/protocol/resources.py)."""
    token = store().tokens.find_bearer(value) if value else None
    if token is None or token.is_revoked() or token.is_expired() or token.is_barred():
        return None
    if not accepts(token.resource, resource):
        return None
    return token


_KEPT = "credits_id.live_token"


def request_bearer(environ: dict[str, Any]) -> stored.StoredToken | None:
    """The live access token of the request's `Authorization: Bearer` header (live_bearer), looked
    up once per request whoever asks - the front, then Flask's userinfo route, or the /v1 budget and
    then its route: kept in the request's WSGI environ, which lives exactly as long as the request
    (`g` belongs to the app context, which a caller may keep open across several requests)."""
    if _KEPT not in environ:
        environ[_KEPT] = live_bearer(bearer_value(environ.get("HTTP_AUTHORIZATION")))
    token: stored.StoredToken | None = environ[_KEPT]
    return token
