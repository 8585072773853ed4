"""Issuing tokens and the one bearer rule. Every token is an opaque random string; only its SHA-256
lives in the database (Authlib's mixins would store it in plain text). The rows are read and
written by the protocol store (app/oauth/store/tokens.py)."""

from __future__ import annotations

from datetime import timedelta
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
    """Authlib token generator, for the code exchange and refresh alike. The scope issued is what
    the member's membership includes now, not when the code or the first token was issued: after a
    downgrade a refresh no longer carries (or stores) the higher tier's scopes. A refresh token only
    when `offline_access` was granted."""
    lifetime = expires_in or int(current_app.config["ACCESS_TOKEN_LIFETIME"])
    if user is not None:
        scope = join(grantable(scope_list(scope), user.tier))
    token: dict[str, Any] = {
        "token_type": "Bearer",
        "access_token": new_secret(32),
        "expires_in": lifetime,
        "scope": scope or "",
    }
    if include_refresh_token and "offline_access" in scope_list(scope):
        token["refresh_token"] = new_secret(32)
    return token


def save_token(token: dict[str, Any], request: OAuth2Request) -> None:
    """Store the pair (hashes only) in the grant family of the code or refresh token it came from.
    The caller commits, so the token rows and the code/refresh consumption land together. The new
    row's id is kept on the request (the refresh grace window seals its answer against it)."""
    parent = request.authorization_code or request.refresh_token
    now = utcnow()
    refresh = token.get("refresh_token")
    request.issued_token_id = stored.issue_token(
        {
            "client_id": request.client.id,
            "user_id": request.user.id,
            "grant_id": parent.grant_id,
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
