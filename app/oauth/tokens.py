"""Issuing, finding and revoking tokens. Every token is an opaque random string; only its
SHA-256 lives in the database (Authlib's mixins would store it in plain text)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from authlib.oauth2.rfc6749 import OAuth2Request, TokenMixin
from flask import current_app
from sqlalchemy import ColumnElement, CursorResult, Label, Row, Table, bindparam, or_, select, update
from sqlalchemy.orm import lazyload

from app import metrics
from app.database import read_row
from app.extensions import db
from app.models import AuthorizationCode, Client, ClientStatus, Interaction, Token, User
from app.models.base import new_secret, sha256_hex, utcnow
from app.scopes import grantable, join, scope_list

# The hot statements, built once: SQLAlchemy computes a statement's cache key on every execution of
# a freshly built statement, but only once for a reused one (profiled: -0.2 ms per lookup). Plain Core
# statements on the tables: the ORM's identity map and unit of work cost about 3x more CPU, and
# nothing here needs them.
_codes, _tokens, _clients, _users = AuthorizationCode.__table__, Token.__table__, Client.__table__, User.__table__
_interactions = Interaction.__table__
_ACCESS_TOKEN = select(Token).where(Token.access_token_hash == bindparam("hash"))
_REFRESH_TOKEN = select(Token).where(Token.refresh_token_hash == bindparam("hash")).options(lazyload(Token.client))
_CODE = (
    select(AuthorizationCode)
    .where(AuthorizationCode.code_hash == bindparam("hash"))
    .options(lazyload(AuthorizationCode.client))
)
_INSERT_TOKEN = _tokens.insert()


def _member_of(table: Table) -> list[Label[Any]]:
    """The member's columns beside a row of `table`, as correlated subqueries: SQLite's RETURNING
    may name only the table it changes, and these let one statement find, spend and describe."""
    columns = (_users.c.sub, _users.c.name, _users.c.email, _users.c.email_verified, _users.c.tier, _users.c.profile_id)
    return [
        select(column)
        .where(_users.c.id == table.c.user_id)
        .correlate(table)
        .scalar_subquery()
        .label(f"member_{column.name}")
        for column in columns
    ]


# Redeeming a code and rotating a refresh token: the lookup and the single-use mark are one UPDATE ...
# RETURNING, so exactly one concurrent caller gets the row (on PostgreSQL the others wait for its
# commit, then find it spent), and the request runs one statement fewer. A failed check later in the
# request (PKCE, redirect_uri) rolls the mark back with the rest of the transaction.
_REDEEM_CODE = (
    _codes.update()
    .where(
        _codes.c.code_hash == bindparam("hash"),
        _codes.c.client_id == bindparam("client"),
        _codes.c.used_at.is_(None),
        _codes.c.expires_at > bindparam("now"),
    )
    .values(used_at=bindparam("now"))
    .returning(
        _codes.c.id,
        _codes.c.grant_id,
        _codes.c.user_id,
        _codes.c.redirect_uri,
        _codes.c.scope,
        _codes.c.nonce,
        _codes.c.code_challenge,
        _codes.c.code_challenge_method,
        _codes.c.auth_time,
        _codes.c.amr,
        *_member_of(_codes),
    )
)
_ROTATE_REFRESH = (
    _tokens.update()
    .where(
        _tokens.c.refresh_token_hash == bindparam("hash"),
        _tokens.c.client_id == bindparam("client"),
        _tokens.c.refresh_used_at.is_(None),
        _tokens.c.revoked_at.is_(None),
        _tokens.c.refresh_expires_at > bindparam("now"),
    )
    .values(refresh_used_at=bindparam("now"))
    .returning(
        _tokens.c.id,
        _tokens.c.grant_id,
        _tokens.c.user_id,
        _tokens.c.scope,
        _tokens.c.auth_time,
        _tokens.c.amr,
        *_member_of(_tokens),
    )
)


# A bearer token as userinfo and /v1 read it: the token, its app and its member in one Core query,
# plain values rather than three ORM objects (110 us less CPU per request, `make layers`).
_BEARER = (
    select(
        _tokens.c.scope,
        _tokens.c.grant_id,
        _tokens.c.user_id,
        _tokens.c.issued_at,
        _tokens.c.access_expires_at,
        _tokens.c.revoked_at,
        _clients.c.client_id,
        _clients.c.status,
        _users.c.sub,
        _users.c.name,
        _users.c.email,
        _users.c.email_verified,
        _users.c.tier,
        _users.c.profile_id,
    )
    .join_from(_tokens, _clients, _clients.c.id == _tokens.c.client_id)
    .join(_users, _users.c.id == _tokens.c.user_id)
    .where(_tokens.c.access_token_hash == bindparam("hash"))
)


@dataclass(frozen=True, slots=True)
class BearerApp:
    """The app a bearer token was issued to (the Client rules apply: `is_active` is the model's)."""

    client_id: str
    status: str

    @property
    def client_metadata(self) -> dict[str, Any]:
        return {}

    @property
    def is_active(self) -> bool:
        return ClientStatus(self.status).is_active


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
    client: Client,
    user: BearerMember | User | None = None,
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
    The caller commits, so the token rows and the code/refresh consumption land together. A Core
    INSERT: nothing reads the new row back in this request (the ORM's unit of work costs 3x more)."""
    parent = request.authorization_code or request.refresh_token
    now = utcnow()
    refresh = token.get("refresh_token")
    db.session.execute(
        _INSERT_TOKEN,
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
        },
    )


def find_access_token(value: str) -> Token | None:
    """One indexed query: the token with its client and user joined (to change or describe it:
    revocation, introspection; a bearer's request uses `find_bearer`)."""
    if not value or len(value) > 512:
        return None
    return db.session.scalar(_ACCESS_TOKEN, {"hash": sha256_hex(value)})


def find_bearer(value: str) -> Bearer | None:
    """The access token a bearer presents (userinfo, /v1), with its app and member: one indexed query,
    outside the request's transaction (on PostgreSQL, one round trip: no BEGIN, no ROLLBACK)."""
    if not value or len(value) > 512:
        return None
    row = read_row(_BEARER, {"hash": sha256_hex(value)})
    if row is None:
        return None
    return Bearer(
        row.scope,
        row.grant_id,
        row.user_id,
        row.issued_at,
        row.access_expires_at,
        row.revoked_at,
        BearerApp(row.client_id, row.status),
        BearerMember(row.user_id, row.sub, row.name, row.email, row.email_verified, row.tier, row.profile_id),
    )


def live_bearer(value: str | None) -> Bearer | None:
    """The one bearer-token rule, for userinfo and the /v1 data API alike: the access token `value`
    names, unless it is unknown, revoked or expired, or its app is no longer active."""
    token = find_bearer(value) if value else None
    if token is None or token.is_revoked() or token.is_expired() or not token.client.is_active:
        return None
    return token


def find_refresh_token(value: str) -> Token | None:
    if not value or len(value) > 512:
        return None
    return db.session.scalar(_REFRESH_TOKEN, {"hash": sha256_hex(value)})


def find_code(value: str) -> AuthorizationCode | None:
    if not value or len(value) > 512:
        return None
    return db.session.scalar(_CODE, {"hash": sha256_hex(value)})


def _member(row: Row[Any]) -> BearerMember:
    return BearerMember(
        row.user_id,
        row.member_sub,
        row.member_name,
        row.member_email,
        row.member_email_verified,
        row.member_tier,
        row.member_profile_id,
    )


@dataclass(frozen=True, slots=True)
class RedeemedCode:
    """An authorization code spent by the statement that found it, with its member: what the token
    response needs (the AuthorizationCode model's rules apply)."""

    id: int
    grant_id: str
    user_id: str
    redirect_uri: str | None
    scope: str
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    auth_time: datetime
    amr: str  # how the member signed in (RFC 8176 values, space-separated)
    user: BearerMember

    get_redirect_uri = AuthorizationCode.get_redirect_uri
    get_scope = AuthorizationCode.get_scope
    get_nonce = AuthorizationCode.get_nonce
    get_auth_time = AuthorizationCode.get_auth_time
    get_acr = AuthorizationCode.get_acr
    get_amr = AuthorizationCode.get_amr


@dataclass(frozen=True, slots=True)
class RotatedRefresh:
    """A refresh token marked rotated by the statement that found it, with its member."""

    id: int
    grant_id: str
    user_id: str
    scope: str
    auth_time: datetime
    amr: str
    user: BearerMember

    get_scope = Token.get_scope

    def check_client(self, client: Client) -> bool:
        return True  # found by its client (the UPDATE's WHERE): another client's token is never returned


def redeem_code(value: str, client: Client, now: datetime | None = None) -> RedeemedCode | None:
    """Find and spend `client`'s live, unused code in one statement; None when there is none (unknown,
    another client's, expired or already used: `find_code` tells which)."""
    if not value or len(value) > 512:
        return None
    row = db.session.execute(
        _REDEEM_CODE, {"hash": sha256_hex(value), "client": client.id, "now": now or utcnow()}
    ).first()
    if row is None:
        return None
    return RedeemedCode(
        row.id,
        row.grant_id,
        row.user_id,
        row.redirect_uri,
        row.scope,
        row.nonce,
        row.code_challenge,
        row.code_challenge_method,
        row.auth_time,
        row.amr,
        _member(row),
    )


def rotate_refresh_token(value: str, client: Client, now: datetime | None = None) -> RotatedRefresh | None:
    """Find `client`'s live refresh token and mark it rotated, in one statement; None when there is
    none (unknown, another client's, expired, revoked or rotated already: `find_refresh_token` tells)."""
    if not value or len(value) > 512:
        return None
    row = db.session.execute(
        _ROTATE_REFRESH, {"hash": sha256_hex(value), "client": client.id, "now": now or utcnow()}
    ).first()
    if row is None:
        return None
    return RotatedRefresh(row.id, row.grant_id, row.user_id, row.scope, row.auth_time, row.amr, _member(row))


def revoke_grant(grant_id: str) -> int:
    """Revoke every token of a grant family (code reuse, refresh reuse). Commits at once, so
    the revocation stands even though the request that found the reuse is rejected."""
    result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]  # an UPDATE's result has a rowcount
        update(Token)
        .where(Token.grant_id == grant_id, Token.revoked_at.is_(None))
        .values(revoked_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    revoked: int = result.rowcount
    metrics.tokens_revoked(revoked)
    return revoked


def end_grants(*, user_id: str | None = None, client_id: int | None = None) -> int:
    """End what a member gave an app: every app's when `client_id` is None, every member's when
    `user_id` is None. Outstanding authorization codes are deleted (a code issued before a
    disconnect must not redeem after it), the member's pending sign-in requests to the app are
    closed, and live access and refresh tokens are revoked. The codes go first: on PostgreSQL a
    redemption already under way holds its code's row, so the DELETE waits for it, and the token
    UPDATE after it then sees (and revokes) the tokens that redemption issued. The caller
    commits, so the consent, the codes and the tokens change together. Returns the tokens revoked."""
    if user_id is None and client_id is None:
        raise ValueError("end_grants needs a member, an app, or both")
    now = utcnow()

    def scoped(table: Table) -> list[ColumnElement[bool]]:
        which: list[ColumnElement[bool]] = []
        if user_id is not None:
            which.append(table.c.user_id == user_id)
        if client_id is not None:
            which.append(table.c.client_id == client_id)
        return which

    session = db.session
    session.execute(_codes.delete().where(*scoped(_codes), _codes.c.used_at.is_(None)))
    session.execute(  # expired rather than consumed: the page then says "start again", not "answered"
        _interactions.update()
        .where(*scoped(_interactions), _interactions.c.consumed_at.is_(None), _interactions.c.expires_at > now)
        .values(expires_at=now)
    )
    result: CursorResult[Any] = session.execute(  # type: ignore[assignment]  # an UPDATE's result has a rowcount
        _tokens.update().where(*scoped(_tokens), _tokens.c.revoked_at.is_(None)).values(revoked_at=now)
    )
    revoked: int = result.rowcount
    metrics.tokens_revoked(revoked)
    return revoked


def live_tokens_filter(now: datetime) -> ColumnElement[bool]:
    """SQL condition for tokens that still grant something (used by account pages, purge)."""
    return (Token.revoked_at.is_(None)) & or_(Token.access_expires_at > now, Token.refresh_expires_at > now)


def narrow_live_tokens(user_id: str, keep: Callable[[list[str]], list[str]], now: datetime | None = None) -> int:
    """Rewrite the scope of a member's live tokens to `keep(scopes)` (a downgrade: what the lower
    membership lacks is gone for good, so an upgrade later does not bring it back without a new
    consent). Returns the tokens changed; the caller commits."""
    rows = db.session.execute(
        select(_tokens.c.id, _tokens.c.scope).where(_tokens.c.user_id == user_id, live_tokens_filter(now or utcnow()))
    ).all()
    changed = 0
    for row in rows:
        narrowed = join(keep(scope_list(row.scope)))
        if narrowed != row.scope:
            db.session.execute(_tokens.update().where(_tokens.c.id == row.id).values(scope=narrowed))
            changed += 1
    return changed
