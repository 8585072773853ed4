"""Issuing tokens and the one bearer rule. Every token is an opaque random string; only its SHA-256
lives in the database (Authlib's mixins would store it in plain text). The rows are read and
written by the protocol store (app/oauth/store/tokens.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from authlib.oauth2.rfc6749 import OAuth2Request
from flask import current_app

from app.models import User
from app.models.base import new_secret, sha256_hex, utcnow
from app.oauth.store import tokens as stored
from app.oauth.store.clients import App
from app.oauth.store.members import Member
from app.scopes import grantable, join, scope_list


def generate_bearer_token(
    grant_type: str,
    client: App,
    user: Member | User | None = None,
    scope: str | None = None,
    expires_in: int | None = None,
    include_refresh_token: bool = True,
) -> dict[str, Any]:
    """Authlib token generator, for the code exchange (a rotation answers with its NewPair)."""
    lifetime = expires_in or int(current_app.config["ACCESS_TOKEN_LIFETIME"])
    refresh = new_secret(32) if include_refresh_token else None
    return bearer_answer(new_secret(32), refresh, lifetime, scope, user)


def bearer_answer(
    access_token: str, refresh_token: str | None, lifetime: int, scope: str | None, user: Member | User | None
) -> dict[str, Any]:
    """The token response's body. The scope issued is what the member's membership includes now,
    not when the code or the first token was issued: after a downgrade a refresh no longer carries
    (or stores) the higher tier's scopes. A refresh token only when `offline_access` was granted."""
    if user is not None:
        scope = join(grantable(scope_list(scope), user.tier))
    token: dict[str, Any] = {
        "token_type": "Bearer",
        "access_token": access_token,
        "expires_in": lifetime,
        "scope": scope or "",
    }
    if refresh_token is not None and "offline_access" in scope_list(scope):
        token["refresh_token"] = refresh_token
    return token


@dataclass(frozen=True, slots=True)
class NewPair:
    """A pair drawn before its row is written: a rotation stores the successor in the statement
    that spends the old refresh token (app/oauth/store/tokens.py), then answers with it."""

    access_token: str
    refresh_token: str
    issued_at: datetime
    lifetime: int  # of the access token, in seconds

    @classmethod
    def draw(cls) -> NewPair:
        return cls(new_secret(32), new_secret(32), utcnow(), int(current_app.config["ACCESS_TOKEN_LIFETIME"]))

    def columns(self) -> dict[str, Any]:
        """What the successor's row holds of it: hashes and times, never the tokens."""
        refresh_lifetime = timedelta(seconds=int(current_app.config["REFRESH_TOKEN_LIFETIME"]))
        return {
            "access_token_hash": sha256_hex(self.access_token),
            "refresh_token_hash": sha256_hex(self.refresh_token),
            "issued_at": self.issued_at,
            "access_expires_at": self.issued_at + timedelta(seconds=self.lifetime),
            "refresh_expires_at": self.issued_at + refresh_lifetime,
        }

    def answer(self, scope: str | None, user: Member) -> dict[str, Any]:
        return bearer_answer(self.access_token, self.refresh_token, self.lifetime, scope, user)


def save_token(token: dict[str, Any], request: OAuth2Request) -> None:
    """Store a code exchange's pair (hashes only) in the code's grant family. The caller commits,
    so the token row and the code's consumption land together. (A rotation stores its successor
    as it spends the old refresh token: RefreshTokenGrant.save_token.)"""
    now = utcnow()
    refresh = token.get("refresh_token")
    stored.issue_token(
        {
            "client_id": request.client.id,
            "user_id": request.user.id,
            "grant_id": request.authorization_code.grant_id,
            "auth_time": request.auth_time,
            "amr": getattr(request, "amr", None) or "pwd",
            "scope": token.get("scope", ""),
            "access_token_hash": sha256_hex(token["access_token"]),
            "refresh_token_hash": sha256_hex(refresh) if refresh else None,
            "issued_at": now,
            "access_expires_at": now + timedelta(seconds=int(token["expires_in"])),
            "refresh_expires_at": (
                now + timedelta(seconds=int(current_app.config["REFRESH_TOKEN_LIFETIME"])) if refresh else None
            ),
        }
    )


def bearer_value(authorization: str | None) -> str | None:
    """The access token of an `Authorization: Bearer <token>` header (RFC 6750 2.1; the scheme is
    case-insensitive), or None: how userinfo, its front and /v1 all read the header."""
    scheme, _, value = (authorization or "").partition(" ")
    value = value.strip()
    return value if scheme.lower() == "bearer" and value else None


def live_bearer(value: str | None) -> stored.StoredToken | None:
    """The one bearer-token rule, for userinfo and the /v1 data API alike: the access token `value`
    names, unless it is unknown, revoked or expired, or its app is no longer active."""
    token = stored.find_bearer(value) if value else None
    if token is None or token.is_revoked() or token.is_expired() or not token.client.is_active:
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
