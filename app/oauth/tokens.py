"""Issuing, finding and revoking tokens. Every token is an opaque random string; only its
SHA-256 lives in the database (Authlib's mixins would store it in plain text)."""

from __future__ import annotations

from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import or_, update

from app import metrics
from app.extensions import db
from app.models import AuthorizationCode, Token
from app.models.base import new_secret, sha256_hex, utcnow
from app.scopes import scope_list


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


def save_token(token: dict, request) -> Token:
    """Store the pair (hashes only) in the grant family of the code or refresh token it came from.
    The caller commits, so the token rows and the code/refresh consumption land together."""
    parent = request.authorization_code or request.refresh_token
    now = utcnow()
    row = Token(
        client_id=request.client.id,
        user_id=request.user.id,
        grant_id=parent.grant_id,
        auth_time=request.auth_time,
        scope=token.get("scope", ""),
        access_token_hash=sha256_hex(token["access_token"]),
        issued_at=now,
        access_expires_at=now + timedelta(seconds=int(token["expires_in"])),
    )
    if "refresh_token" in token:
        row.refresh_token_hash = sha256_hex(token["refresh_token"])
        row.refresh_expires_at = now + timedelta(seconds=int(current_app.config["REFRESH_TOKEN_LIFETIME"]))
    db.session.add(row)
    db.session.flush()
    return row


def find_access_token(value: str) -> Token | None:
    """One indexed query: the token with its client and user joined."""
    if not value or len(value) > 512:
        return None
    return db.session.scalar(db.select(Token).where(Token.access_token_hash == sha256_hex(value)))


def find_refresh_token(value: str) -> Token | None:
    if not value or len(value) > 512:
        return None
    return db.session.scalar(db.select(Token).where(Token.refresh_token_hash == sha256_hex(value)))


def find_code(value: str) -> AuthorizationCode | None:
    if not value or len(value) > 512:
        return None
    return db.session.scalar(db.select(AuthorizationCode).where(AuthorizationCode.code_hash == sha256_hex(value)))


def consume_code(code: AuthorizationCode, now: datetime | None = None) -> bool:
    """Atomically mark the code used. Exactly one concurrent caller gets True (a conditional
    UPDATE, not check-then-write); on PostgreSQL the losers wait for the winner's commit."""
    result = db.session.execute(
        update(AuthorizationCode)
        .where(AuthorizationCode.id == code.id, AuthorizationCode.used_at.is_(None))
        .values(used_at=now or utcnow())
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def consume_refresh_token(token: Token, now: datetime | None = None) -> bool:
    """Atomically mark a refresh token rotated; True for exactly one concurrent caller."""
    result = db.session.execute(
        update(Token)
        .where(Token.id == token.id, Token.refresh_used_at.is_(None), Token.revoked_at.is_(None))
        .values(refresh_used_at=now or utcnow())
        .execution_options(synchronize_session=False)
    )
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


def revoke_user_client_tokens(user_id: str, client_id: int) -> int:
    """Revoke every live token a member gave one app (consent revoked, app removed)."""
    result = db.session.execute(
        update(Token)
        .where(Token.user_id == user_id, Token.client_id == client_id, Token.revoked_at.is_(None))
        .values(revoked_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    metrics.tokens_revoked(result.rowcount)
    return result.rowcount


def live_tokens_filter(now: datetime):
    """SQL condition for tokens that still grant something (used by account pages, purge)."""
    return (Token.revoked_at.is_(None)) & or_(Token.access_expires_at > now, Token.refresh_expires_at > now)
