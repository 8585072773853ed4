"""Access and refresh tokens: issued as hashes, read by their bearer, rotated in one statement,
revoked by family, by member or by app.

Revocation wins every race with a rotation in flight. At READ COMMITTED an UPDATE that revokes a
member's or an app's tokens cannot see the successor pair that a concurrent, not yet committed
rotation has inserted: it would wait for the spent row, revoke it, and leave the successor alive.
So the two serialize on locks named after the member and the app (PostgreSQL's advisory locks,
app/store/postgresql.py):

- the statement that stores a pair (SpendAndStore: a code redeemed, a refresh token rotated) first
  takes its member's and its app's lock in shared mode, and only while the member is not
  suspended and the app active; only then does it spend (lock) the code or token row;
- `end_grants` first takes the member's lock exclusively, or the app's when it ends an app's
  grants, and only then deletes codes and revokes tokens.

Whichever comes second waits for the first to commit. A revocation that waited then revokes with
a later statement, whose snapshot holds every pair stored by the rotations it waited for; a
rotation that waited finds (PostgreSQL re-reads a row that changed while it waited) its code
deleted or its token revoked, and stores nothing. Both take those locks before any code or token
row, so they cannot deadlock. SQLite needs none of it: one writer at a time.

Whatever was revoked, a suspended member's or a disabled app's token is refused by every check
on its own: SpendAndStore's condition, and `StoredToken.is_barred` for bearers and introspection."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from authlib.oauth2.rfc6749 import TokenMixin
from sqlalchemy import ColumnElement, Delete, Table, Update, bindparam, exists, func, literal, or_, select

from app.core import metrics
from app.core.scopes import join, scope_list
from app.models import AuthorizationCode, Client, ClientStatus, Interaction, RefreshReplay, Token, User
from app.models.base import sha256_hex, utcnow
from app.store.members import Member, member_columns, member_from, member_joined
from app.store.statements import first, run

_tokens, _codes, _clients, _users = Token.__table__, AuthorizationCode.__table__, Client.__table__, User.__table__
_interactions, _replays = Interaction.__table__, RefreshReplay.__table__
_SEALED = select(_replays.c.successor_id, _replays.c.sealed).where(_replays.c.token_id == bindparam("pk"))
_INSERT = _tokens.insert().returning(_tokens.c.id)

# A code exchange and a rotation each spend what the client presented and store the pair that
# replaces it. The new pair copies the spent row's app, member, grant and login, and its scope (a
# narrowed request's scope when one is given); its hashes and times are drawn by the caller
# (app/protocol/tokens.py: NewPair).
COPIED = ("client_id", "user_id", "grant_id", "auth_time", "amr", "resource")
DRAWN = ("access_token_hash", "refresh_token_hash", "issued_at", "access_expires_at", "refresh_expires_at")


_ACTIVE = literal(ClientStatus.ACTIVE.value)


def in_good_standing(table: Table) -> list[ColumnElement[bool]]:
    """A row of `table` (a code, a token) whose member is not suspended and whose app is active:
    only such a row may buy a pair (SQLite's condition; PostgreSQL's is SpendAndStore's lock)."""
    return [
        exists().where(_users.c.id == table.c.user_id, _users.c.suspended_at.is_(None)),
        exists().where(_clients.c.id == table.c.client_id, _clients.c.status == _ACTIVE),
    ]


@dataclass(frozen=True, slots=True)
class Spent:
    """What spending returned: the spent row, with its member as `member_*`, and the new pair's id."""

    row: Any
    successor_id: int


class SpendAndStore:
    """Spend one credential (an UPDATE that marks it used) and store its successor pair, only while
    its member is not suspended and its app is active: the UPDATE, with the member beside the row
    and the standing in its WHERE, then the INSERT, in the request's transaction (a refusal after
    it rolls both back). PostgreSQL does both in one statement that also locks the member and the
    app (app/store/postgresql.py: FoldedSpendAndStore). Built once, at import, like every statement
    of the hot paths."""

    def __init__(self, spend: Update, returning: tuple[ColumnElement[Any], ...]) -> None:
        table = spend.table
        assert isinstance(table, Table)  # a code's or a token's, found by its hash
        self._with_member = spend.where(*in_good_standing(table)).returning(*returning, *member_columns(table))

    def __call__(self, params: dict[str, Any], successor: dict[str, Any], scope: str | None = None) -> Spent | None:
        """Spend (`params`: the UPDATE's) and store `successor` (NewPair.columns) with the spent
        row's scope, or `scope`; None, and nothing written, when nothing matched."""
        row = first(self._with_member, params)
        if row is None:
            return None
        copied = {name: getattr(row, name) for name in COPIED}
        return Spent(row, _issue({**copied, **successor, "scope": scope or row.scope}))


# What rotating spends and hands back (SpendAndStore's or FoldedSpendAndStore's arguments).
ROTATION = (
    _tokens.update()
    .where(
        _tokens.c.refresh_token_hash == bindparam("hash"),
        _tokens.c.client_id == bindparam("client"),
        _tokens.c.refresh_used_at.is_(None),
        _tokens.c.revoked_at.is_(None),
        _tokens.c.refresh_expires_at > bindparam("now"),
    )
    .values(refresh_used_at=bindparam("now")),
    (_tokens.c.id, *(_tokens.c[name] for name in COPIED), _tokens.c.scope),
)
_AMEND_KEEPING_REFRESH = _tokens.update().where(_tokens.c.id == bindparam("pk")).values(scope=bindparam("scope"))
_AMEND_DROPPING_REFRESH = _AMEND_KEEPING_REFRESH.values(refresh_token_hash=None, refresh_expires_at=None)
_DISCARD = _tokens.delete().where(_tokens.c.id == bindparam("pk"))

# A token with its app's public id and its member, in one query: what a bearer (userinfo, /v1),
# revocation and introspection need, as plain values rather than three ORM objects.
_STORED_COLUMNS = (
    _tokens.c.id,
    _tokens.c.client_id,
    _tokens.c.user_id,
    _tokens.c.grant_id,
    _tokens.c.scope,
    _tokens.c.issued_at,
    _tokens.c.access_expires_at,
    _tokens.c.refresh_expires_at,
    _tokens.c.refresh_used_at,
    _tokens.c.revoked_at,
    _tokens.c.resource,
    _clients.c.client_id.label("app_client_id"),
    _clients.c.status.label("app_status"),
    *member_joined(),
    _users.c.suspended_at.label("member_suspended_at"),
)
_WITH_APP_AND_MEMBER = (
    select(*_STORED_COLUMNS)
    .join_from(_tokens, _clients, _clients.c.id == _tokens.c.client_id)
    .join(_users, _users.c.id == _tokens.c.user_id)
)
_BY_ACCESS_HASH = _WITH_APP_AND_MEMBER.where(_tokens.c.access_token_hash == bindparam("hash"))
_BY_REFRESH_HASH = _WITH_APP_AND_MEMBER.where(_tokens.c.refresh_token_hash == bindparam("hash"))
_BY_ID = _WITH_APP_AND_MEMBER.where(_tokens.c.id == bindparam("id"))


@dataclass(frozen=True, slots=True)
class TokenApp:
    """The app a token was issued to (the Client rules apply: `is_active` is the model's)."""

    id: int
    client_id: str
    status: str

    @property
    def client_metadata(self) -> dict[str, Any]:
        return {}

    @property
    def is_active(self) -> bool:
        return ClientStatus(self.status).is_active


@dataclass(frozen=True, slots=True)
class StoredToken(TokenMixin):
    """One issued pair as stored, read-only, with its app and member, and the rules Authlib asks of
    a token (TokenMixin)."""

    id: int
    user_id: str
    grant_id: str
    scope: str
    issued_at: datetime
    access_expires_at: datetime
    refresh_expires_at: datetime | None
    refresh_used_at: datetime | None
    revoked_at: datetime | None
    resource: str | None  # the resource (RFC 8707) it is bound to; None: the provider's own APIs
    client: TokenApp
    user: Member
    member_suspended: bool

    @property
    def client_id(self) -> int:
        return self.client.id

    def is_barred(self) -> bool:
        """Whether the token grants nothing whatever its own state: its member is suspended or its
        app no longer active (a suspension or a disable revokes it too; this holds without that)."""
        return self.member_suspended or not self.client.is_active

    # -- authlib.oauth2.rfc6749.TokenMixin ------------------------------------------------------

    def check_client(self, client: Any) -> bool:
        return bool(self.client.id == client.id)

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return max(0, int((self.access_expires_at - self.issued_at).total_seconds()))

    def is_expired(self) -> bool:
        return utcnow() >= self.access_expires_at

    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def get_user(self) -> Member:
        return self.user

    def get_client(self) -> TokenApp:
        return self.client


def _stored(row: Any) -> StoredToken | None:
    if row is None:
        return None
    return StoredToken(
        row.id,
        row.user_id,
        row.grant_id,
        row.scope,
        row.issued_at,
        row.access_expires_at,
        row.refresh_expires_at,
        row.refresh_used_at,
        row.revoked_at,
        row.resource,
        TokenApp(row.client_id, row.app_client_id, row.app_status),
        member_from(row),
        row.member_suspended_at is not None,
    )


@dataclass(frozen=True, slots=True)
class RotatedRefresh:
    """A refresh token marked rotated as it was found, with its member and its successor's row."""

    id: int
    grant_id: str
    user_id: str
    scope: str
    auth_time: datetime
    amr: str
    resource: str | None  # the resource its family is bound to (RFC 8707)
    user: Member
    successor_id: int  # the row of the pair that replaces it, written by the same rotation

    def get_scope(self) -> str:
        return self.scope

    def check_client(self, client: Any) -> bool:
        return True  # found by its client (the UPDATE's WHERE): another client's token is never returned


def discard_unissued_pair(pk: int) -> None:
    """Delete a pair that spending stored but the request then refused: it was never handed out."""
    run(_DISCARD, {"pk": pk})


def _issue(values: dict[str, Any]) -> int:
    """Store one pair (`values`: the columns, hashes only); returns its row id."""
    row = first(_INSERT, values)
    assert row is not None  # an INSERT ... RETURNING of one row
    return int(row.id)


class SqlTokens:
    """Tokens, in SQL: a rotation is an UPDATE, then an INSERT; a revocation takes no lock (SQLite
    lets one writer in at a time). PostgreSQL's are app/store/postgresql.py's PostgresTokens."""

    def __init__(self) -> None:
        self._rotate: Callable[..., Spent | None] = SpendAndStore(*ROTATION)

    def issue(self, values: dict[str, Any]) -> int:
        """Store one pair (`values`: the columns, hashes only); returns its row id."""
        return _issue(values)

    def _held_while_ending(self, codes: Delete, user_id: str | None, client_id: int | None) -> Delete:
        """The DELETE of the codes that ending grants begins with; PostgreSQL's takes a lock."""
        return codes

    def find_bearer(self, value: str) -> StoredToken | None:
        """The access token a bearer presents (userinfo, /v1), with its app and member: one indexed
        query (on PostgreSQL one round trip: a read before any write sends no BEGIN)."""
        if not value or len(value) > 512:
            return None
        return _stored(first(_BY_ACCESS_HASH, {"hash": sha256_hex(value)}))

    def find_access(self, value: str) -> StoredToken | None:
        """The pair whose access token is `value`, in the request's transaction (to revoke or describe it)."""
        if not value or len(value) > 512:
            return None
        return _stored(first(_BY_ACCESS_HASH, {"hash": sha256_hex(value)}))

    def find_refresh(self, value: str) -> StoredToken | None:
        """The pair whose refresh token is `value`, rotated or not."""
        if not value or len(value) > 512:
            return None
        return _stored(first(_BY_REFRESH_HASH, {"hash": sha256_hex(value)}))

    def find(self, pk: int) -> StoredToken | None:
        return _stored(first(_BY_ID, {"id": pk}))

    def rotate_refresh(
        self, value: str, client_pk: int, successor: dict[str, Any], scope: str | None = None
    ) -> RotatedRefresh | None:
        """Find the app's live refresh token, mark it rotated and store its successor (`successor`:
        the drawn hashes and times; the scope is the old one, or `scope` when the request narrows it);
        None, and nothing written, when there is no such token (unknown, another app's, expired,
        revoked or rotated already: `find_refresh_token` tells). The caller commits."""
        if not value or len(value) > 512:
            return None
        spent = self._rotate(
            {"hash": sha256_hex(value), "client": client_pk, "now": successor["issued_at"]}, successor, scope
        )
        if spent is None:
            return None
        row = spent.row
        return RotatedRefresh(
            row.id,
            row.grant_id,
            row.user_id,
            row.scope,
            row.auth_time,
            row.amr,
            row.resource,
            member_from(row),
            spent.successor_id,
        )

    def discard_unissued(self, pk: int) -> None:
        """Delete a pair that spending stored but the request then refused: it was never handed out."""
        discard_unissued_pair(pk)

    def amend_successor(self, pk: int, scope: str, keeps_refresh: bool) -> None:
        """Give a new pair the scope its answer carries, and drop its refresh token when the answer
        has none (the scope cut to the member's membership, or without `offline_access`): where the
        answer differs from what spending copied."""
        run(_AMEND_KEEPING_REFRESH if keeps_refresh else _AMEND_DROPPING_REFRESH, {"pk": pk, "scope": scope})

    def revoke(self, pk: int) -> int:
        """Revoke one pair (its access and its refresh token); 0 when it was revoked already."""
        revoked = _rowcount(
            _tokens.update().where(_tokens.c.id == pk, _tokens.c.revoked_at.is_(None)).values(revoked_at=utcnow())
        )
        metrics.tokens_revoked(revoked)
        return revoked

    def revoke_grant(self, grant_id: str) -> int:
        """Revoke every token of a grant family (code reuse, refresh reuse, a refresh token revoked)."""
        revoked = _rowcount(
            _tokens.update()
            .where(_tokens.c.grant_id == grant_id, _tokens.c.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
        metrics.tokens_revoked(revoked)
        return revoked

    def end_grants(self, *, user_id: str | None = None, client_id: int | None = None) -> int:
        """End what a member gave an app: every app's when `client_id` is None, every member's when
        `user_id` is None. Outstanding authorization codes are deleted (a code issued before a
        disconnect must not redeem after it), the member's pending sign-in requests to the app are
        closed, and live access and refresh tokens are revoked, with nothing in flight left behind.

        On PostgreSQL the first statement takes the member's lock (the app's, when no member is named)
        as it deletes the codes: it waits for every redemption and rotation of theirs under way, which
        hold it shared until they commit (SpendAndStore), and from then until this transaction
        commits none can start. The token UPDATE, a later statement, then sees (and revokes) every pair
        those stored. The caller commits, so the consent, the codes and the tokens change together,
        and the lock holds until then. Returns the tokens revoked."""
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

        codes = _codes.delete().where(*scoped(_codes), _codes.c.used_at.is_(None))
        run(self._held_while_ending(codes, user_id, client_id))
        run(  # expired rather than consumed: the page then says "start again", not "answered"
            _interactions.update()
            .where(*scoped(_interactions), _interactions.c.consumed_at.is_(None), _interactions.c.expires_at > now)
            .values(expires_at=now)
        )
        revoked = _rowcount(
            _tokens.update().where(*scoped(_tokens), _tokens.c.revoked_at.is_(None)).values(revoked_at=now)
        )
        metrics.tokens_revoked(revoked)
        return revoked

    def narrow_live(self, user_id: str, keep: Callable[[list[str]], list[str]], now: datetime | None = None) -> int:
        """Rewrite the scope of a member's live tokens to `keep(scopes)` (a downgrade: what the lower
        membership lacks is gone for good, so an upgrade later does not bring it back without a new
        consent). Returns the tokens changed; the caller commits."""
        rows = run(
            select(_tokens.c.id, _tokens.c.scope).where(
                _tokens.c.user_id == user_id, live_tokens_filter(now or utcnow())
            )
        ).all()
        changed = 0
        for row in rows:
            narrowed = join(keep(scope_list(row.scope)))
            if narrowed != row.scope:
                run(_tokens.update().where(_tokens.c.id == row.id).values(scope=narrowed))
                changed += 1
        return changed

    def seal_answer(self, token_pk: int, successor_pk: int, sealed: bytes, purge_before: datetime) -> None:
        """Keep a rotation's sealed answer for the grace window (app/protocol/refresh_grace.py), dropping
        the answers whose window has closed."""
        run(_replays.delete().where(_replays.c.created_at < purge_before))
        run(
            _replays.insert(),
            {"token_id": token_pk, "successor_id": successor_pk, "sealed": sealed, "created_at": utcnow()},
        )

    def sealed_answer(self, token_pk: int) -> tuple[int, bytes] | None:
        """The successor's row id and the sealed answer of a rotation, if one is kept."""
        row = first(_SEALED, {"pk": token_pk})
        return None if row is None else (int(row.successor_id), bytes(row.sealed))

    def last_use_by_app(self, user_id: str) -> dict[int, datetime]:
        """When each app last had a token issued for the member (by the app's row id)."""
        rows = run(
            select(_tokens.c.client_id, func.max(_tokens.c.issued_at))
            .where(_tokens.c.user_id == user_id)
            .group_by(_tokens.c.client_id)
        ).all()
        return dict(rows)

    def live_grants_by_app(self, user_id: str, now: datetime) -> dict[int, LiveGrant]:
        """The apps holding a live token of the member, with what they hold, in one query."""
        rows = run(
            select(_tokens.c.client_id, _tokens.c.issued_at, _tokens.c.scope)
            .where(_tokens.c.user_id == user_id, live_tokens_filter(now))
            .order_by(_tokens.c.issued_at, _tokens.c.id)
        ).all()
        grants: dict[int, LiveGrant] = {}
        for client_pk, issued_at, scope in rows:
            grant = grants.setdefault(client_pk, LiveGrant(issued_at, []))
            grant.scopes.extend(s for s in scope_list(scope) if s not in grant.scopes)
        return grants

    def live_count(self, client_pk: int, now: datetime) -> int:
        """How many of an app's tokens still grant something."""
        count = run(
            select(func.count()).select_from(_tokens).where(_tokens.c.client_id == client_pk, live_tokens_filter(now))
        ).scalar_one()
        return int(count)


def _rowcount(statement: Any) -> int:
    result = run(statement)
    return int(result.rowcount)


def live_tokens_filter(now: datetime) -> ColumnElement[bool]:
    """SQL condition for tokens that still grant something (account pages, the console, purges)."""
    return (_tokens.c.revoked_at.is_(None)) & or_(_tokens.c.access_expires_at > now, _tokens.c.refresh_expires_at > now)


# -- what the account page and the console show of a member's or an app's tokens ----------------


@dataclass(frozen=True, slots=True)
class LiveGrant:
    """What an app holds of a member now: since when (its oldest live token) and every scope its
    live tokens carry, each once, in order of issue."""

    first_issued: datetime
    scopes: list[str]
