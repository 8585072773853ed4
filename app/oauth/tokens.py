"""Issuing, finding and revoking tokens. Every token is an opaque random string; only its
SHA-256 lives in the database (Authlib's mixins would store it in plain text)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from authlib.oauth2.rfc6749 import TokenMixin
from flask import current_app
from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.orm import lazyload

from app import metrics
from app.extensions import db
from app.models import AuthorizationCode, Client, Token, User
from app.models.base import new_secret, sha256_hex, utcnow
from app.scopes import scope_list

# The hot statements, built once: SQLAlchemy computes a statement's cache key on every execution of
# a freshly built statement, but only once for a reused one (profiled: -0.2 ms per lookup). Codes and
# refresh tokens are only redeemed after the client authenticated, so their client comes from the
# session's identity map instead of a JOIN; bearer tokens keep the JOIN (userinfo has no client yet).
_ACCESS_TOKEN = select(Token).where(Token.access_token_hash == bindparam("hash"))
_REFRESH_TOKEN = select(Token).where(Token.refresh_token_hash == bindparam("hash")).options(lazyload(Token.client))
_CODE = (
    select(AuthorizationCode)
    .where(AuthorizationCode.code_hash == bindparam("hash"))
    .options(lazyload(AuthorizationCode.client))
)
# Writes as plain Core statements on the tables: nothing reads the written rows back in the same
# request, and the ORM's unit of work (or an ORM-enabled UPDATE) costs about 3x more CPU.
_codes, _tokens, _clients, _users = AuthorizationCode.__table__, Token.__table__, Client.__table__, User.__table__
_INSERT_TOKEN = _tokens.insert()
_CONSUME_CODE = _codes.update().where(_codes.c.id == bindparam("pk"), _codes.c.used_at.is_(None)).values(
    used_at=bindparam("now")
)
_CONSUME_REFRESH = (
    _tokens.update()
    .where(_tokens.c.id == bindparam("pk"), _tokens.c.refresh_used_at.is_(None), _tokens.c.revoked_at.is_(None))
    .values(refresh_used_at=bindparam("now"))
)


# A bearer token as userinfo and /v1 read it: the token, its app and its member in one Core query,
# plain values rather than three ORM objects (110 us less CPU per request, `make layers`).
_BEARER = (
    select(_tokens.c.scope, _tokens.c.grant_id, _tokens.c.user_id, _tokens.c.issued_at, _tokens.c.access_expires_at,
           _tokens.c.revoked_at, _clients.c.client_id, _clients.c.status, _users.c.sub, _users.c.name,
           _users.c.email, _users.c.email_verified, _users.c.tier, _users.c.profile_id)
    .join_from(_tokens, _clients, _clients.c.id == _tokens.c.client_id)
    .join(_users, _users.c.id == _tokens.c.user_id)
    .where(_tokens.c.access_token_hash == bindparam("hash"))
)


@dataclass(frozen=True, slots=True)
class BearerApp:
    """The app a bearer token was issued to (the Client rules apply: `is_active` is the model's)."""

    client_id: str
    status: str
    client_metadata = Client.client_metadata
    is_active = Client.is_active


@dataclass(frozen=True, slots=True)
class BearerMember:
    """The member a bearer token speaks for: what their claims and their data reach need."""

    id: str
    sub: str
    name: str
    email: str
    email_verified: bool
    tier: str
    profile_id: str | None


@dataclass(frozen=True, slots=True)
class Bearer(TokenMixin):
    """An access token as its bearer presents it, read-only (the Token model's rules apply)."""

    scope: str
    grant_id: str
    user_id: str
    issued_at: datetime
    access_expires_at: datetime
    revoked_at: datetime | None
    client: BearerApp
    user: BearerMember

    get_scope = Token.get_scope
    get_expires_in = Token.get_expires_in
    is_expired = Token.is_expired
    is_revoked = Token.is_revoked
    get_user = Token.get_user
    get_client = Token.get_client


def generate_bearer_token(
    grant_type: str,
    client,
    user=None,
    scope: str | None = None,
    expires_in: int | None = None,
    include_refresh_token: bool = True,
) -> dict:
    """Authlib token generator. A refresh token only when `offline_access` was granted."""
    lifetime = expires_in or int(current_app.config["ACCESS_TOKEN_LIFETIME"])
    token = {
        "token_type": "Bearer",
        "access_token": new_secret(32),
        "expires_in": lifetime,
        "scope": scope or "",
    }
    if include_refresh_token and "offline_access" in scope_list(scope):
        token["refresh_token"] = new_secret(32)
    return token


def save_token(token: dict, request) -> None:
    """Store the pair (hashes only) in the grant family of the code or refresh token it came from.
    The caller commits, so the token rows and the code/refresh consumption land together. A Core
    INSERT: nothing reads the new row back in this request (the ORM's unit of work costs 3x more)."""
    parent = request.authorization_code or request.refresh_token
    now = utcnow()
    refresh = token.get("refresh_token")
    db.session.execute(_INSERT_TOKEN, {
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
    })


def find_access_token(value: str) -> Token | None:
    """One indexed query: the token with its client and user joined (to change or describe it:
    revocation, introspection; a bearer's request uses `find_bearer`)."""
    if not value or len(value) > 512:
        return None
    return db.session.scalar(_ACCESS_TOKEN, {"hash": sha256_hex(value)})


def find_bearer(value: str) -> Bearer | None:
    """The access token a bearer presents (userinfo, /v1), with its app and member: one indexed query."""
    if not value or len(value) > 512:
        return None
    row = db.session.connection().execute(_BEARER, {"hash": sha256_hex(value)}).first()
    if row is None:
        return None
    return Bearer(row.scope, row.grant_id, row.user_id, row.issued_at, row.access_expires_at, row.revoked_at,
                  BearerApp(row.client_id, row.status),
                  BearerMember(row.user_id, row.sub, row.name, row.email, row.email_verified, row.tier, row.profile_id))


def find_refresh_token(value: str) -> Token | None:
    if not value or len(value) > 512:
        return None
    return db.session.scalar(_REFRESH_TOKEN, {"hash": sha256_hex(value)})


def find_code(value: str) -> AuthorizationCode | None:
    if not value or len(value) > 512:
        return None
    return db.session.scalar(_CODE, {"hash": sha256_hex(value)})


def consume_code(code: AuthorizationCode, now: datetime | None = None) -> bool:
    """Atomically mark the code used. Exactly one concurrent caller gets True (a conditional
    UPDATE, not check-then-write); on PostgreSQL the losers wait for the winner's commit."""
    result = db.session.execute(_CONSUME_CODE, {"pk": code.id, "now": now or utcnow()})
    return result.rowcount == 1


def consume_refresh_token(token: Token, now: datetime | None = None) -> bool:
    """Atomically mark a refresh token rotated; True for exactly one concurrent caller."""
    result = db.session.execute(_CONSUME_REFRESH, {"pk": token.id, "now": now or utcnow()})
    return result.rowcount == 1


def revoke_grant(grant_id: str) -> int:
    """Revoke every token of a grant family (code reuse, refresh reuse). Commits at once, so
    the revocation stands even though the request that found the reuse is rejected."""
    result = db.session.execute(
        update(Token)
        .where(Token.grant_id == grant_id, Token.revoked_at.is_(None))
        .values(revoked_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    metrics.tokens_revoked(result.rowcount)
    return result.rowcount


def revoke_user_client_tokens(user_id: str, client_id: int | None = None) -> int:
    """Revoke every live token a member gave one app (consent revoked, app removed), or every
    app when `client_id` is None (a password changed after a compromise)."""
    which = (Token.user_id == user_id) & Token.revoked_at.is_(None)
    if client_id is not None:
        which &= Token.client_id == client_id
    result = db.session.execute(
        update(Token).where(which).values(revoked_at=utcnow()).execution_options(synchronize_session=False)
    )
    metrics.tokens_revoked(result.rowcount)
    return result.rowcount


def live_tokens_filter(now: datetime):
    """SQL condition for tokens that still grant something (used by account pages, purge)."""
    return (Token.revoked_at.is_(None)) & or_(Token.access_expires_at > now, Token.refresh_expires_at > now)
