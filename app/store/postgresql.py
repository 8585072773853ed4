"""The store on PostgreSQL: the SQL implementations (app/store/<aggregate>.py), with what PostgreSQL
does better in their place. This module is the one place a dialect is spelled out.

- **Several writes in one statement** (data-modifying CTEs): a code redeemed or a refresh token
  rotated with the pair it buys stored (`FoldedSpendAndStore`), a login started with its audit line
  and its pending request attached, a consent page's answer with the consent, its audit line and
  the code. Each is one round trip where SQLite needs two to four, still in the request's
  transaction, and each writes nothing unless its first step matched.
- **Revocation wins every race with a rotation in flight** (app/store/tokens.py's docstring says
  why it must): storing a pair takes the member's and the app's advisory locks shared first, and
  ending grants takes the member's (or the app's) exclusively before anything else, so whichever
  comes second waits for the first to commit and then sees what it did.
- **Apps and presented API keys kept between requests** while LISTEN/NOTIFY vouches for them
  (app/store/row_cache.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, TypeVar

from sqlalchemy import (
    CTE,
    Column,
    ColumnElement,
    Delete,
    Engine,
    Integer,
    Select,
    Table,
    Update,
    bindparam,
    cast,
    event,
    exists,
    func,
    literal_column,
    select,
    true,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import IntegrityError

from app.models import (
    ApiKey,
    ApiUsage,
    AuditEvent,
    AuthorizationCode,
    BillingAccount,
    BillingEntry,
    BillingWebhookEvent,
    Client,
    Consent,
    Interaction,
    LoginSession,
    RosterProfile,
    Token,
    User,
)
from app.store import row_cache
from app.store.api_keys import SqlApiKeys
from app.store.apps import App, Key, RegisteredApp, SqlApps
from app.store.audit_trail import SqlAuditTrail
from app.store.billing import SqlBilling
from app.store.codes import REDEMPTION, SqlCodes
from app.store.logins import Login, SqlLogins, login_row, started
from app.store.members import MEMBER_COLUMNS, Member, member_joined
from app.store.meter import FOLDED, SqlMeter, adding
from app.store.pending_requests import CONSUMED, SqlPendingRequests
from app.store.rosters import SqlRosters
from app.store.statements import first, run
from app.store.tokens import _ACTIVE, COPIED, DRAWN, ROTATION, Spent, SqlTokens
from app.store.unit_of_work import has_written, on_its_own, unit_of_work

_users, _clients, _tokens = User.__table__, Client.__table__, Token.__table__
_events, _codes, _consents = AuditEvent.__table__, AuthorizationCode.__table__, Consent.__table__
_sessions, _requests = LoginSession.__table__, Interaction.__table__
R = TypeVar("R")  # a row kept between requests (an app, a presented key)


def rows_for_each(source: CTE, table: Table, columns: Sequence[str], prefix: str) -> Select[Any]:
    """One row of bound values for each row of `source` (none or one), to INSERT ... SELECT into
    `table`: a write that happens only when the statement's first step matched. Each of `columns`
    is bound as `prefix` + its name, typed as `table`'s column (`prefixed` makes the parameters)."""
    values = (bindparam(f"{prefix}{name}", type_=table.c[name].type) for name in columns)
    return select(*values).select_from(source)


def prefixed(prefix: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """`row`'s values as the parameters `rows_for_each` binds."""
    return {f"{prefix}{name}": value for name, value in row.items()}


# -- a code redeemed, a refresh token rotated -------------------------------------------------------


# The first key of the two-key advisory locks that serialize revocation with rotation: a member's
# (the second key: the hash of their id; a collision only makes two members wait for each other)
# and an app's (its row id). Advisory, not row locks: a share lock on a row is a write to it
# (PostgreSQL records the lockers in the row's header, with a multixact when there are several),
# so every refresh of a busy member or app would write to the same two rows; an advisory lock is
# held in the lock table alone and costs no write.
MEMBER_LOCK, APP_LOCK = 1, 2


def member_lock(user_id: Any) -> tuple[ColumnElement[int], ColumnElement[int]]:
    """The advisory lock key of the member `user_id` (a column or a value)."""
    return literal_column(str(MEMBER_LOCK)), func.hashtext(user_id)


def app_lock(client_pk: Any) -> tuple[ColumnElement[int], ColumnElement[int]]:
    """The advisory lock key of the app whose row id is `client_pk` (a column or a value)."""
    return literal_column(str(APP_LOCK)), cast(client_pk, Integer)


class FoldedSpendAndStore:
    """Spend one credential and store its successor pair in one statement. Its first step, `held`,
    finds the credential's member and app (with the member's columns the answer needs), only while
    the member is not suspended and the app active, and takes the member's and the app's advisory
    locks in shared mode; the UPDATE runs only once `held` found the credential's member and app in
    good standing (a one-time filter: after the locks), so it spends nothing otherwise. Those locks
    are what `end_grants` waits for.

    A rotation that had to wait for an `end_grants` still read the member with the snapshot it
    started with, but its UPDATE re-reads the credential's row as that transaction left it: revoked
    (a token) or deleted (a code), so nothing is spent and no pair is stored."""

    def __init__(self, spend: Update, returning: tuple[ColumnElement[Any], ...]) -> None:
        self._names = [c.name for c in returning if isinstance(c, Column)]
        table, found = spend.table, spend.whereclause
        assert isinstance(table, Table) and found is not None  # a code's or a token's, by its hash
        tokens = _tokens
        held = (
            select(
                table.c.user_id,
                *member_joined(),
                func.pg_advisory_xact_lock_shared(*member_lock(_users.c.id)).label("member_held"),
                func.pg_advisory_xact_lock_shared(*app_lock(_clients.c.id)).label("app_held"),
            )
            .join_from(table, _users, _users.c.id == table.c.user_id)
            .join(_clients, _clients.c.id == table.c.client_id)
            .where(found, _users.c.suspended_at.is_(None), _clients.c.status == _ACTIVE)
            .cte("held")
        )
        # A one-time filter on `held` (PostgreSQL runs it, locks and all, before the UPDATE reads a
        # row), not a condition on the row's member: a `user_id = ...` beside `client_id = ...` let
        # the planner's generic plan pick the (member, app) index over the hash's, reading every
        # token the member ever held at that app - a cost that grew with each rotation.
        spent = spend.where(exists(select(held.c.user_id))).returning(*returning).cte("spent")
        # (Parameters named like a column would join the UPDATE's SET clause: hence `new_`.)
        drawn = [bindparam(f"new_{name}", type_=tokens.c[name].type) for name in DRAWN]
        scope = func.coalesce(bindparam("new_scope", type_=tokens.c.scope.type), spent.c.scope)
        successor = (
            tokens.insert()
            .from_select([*COPIED, "scope", *DRAWN], select(*(spent.c[name] for name in COPIED), scope, *drawn))
            .returning(tokens.c.id)
            .cte("successor")
        )
        self._in_one = (
            select(
                *(spent.c[name] for name in self._names),
                successor.c.id.label("successor_id"),
                *(held.c[f"member_{name}"] for name in MEMBER_COLUMNS),
            )
            .select_from(spent)
            .join(successor, true())
            .join(held, true())
        )

    def __call__(self, params: dict[str, Any], successor: dict[str, Any], scope: str | None = None) -> Spent | None:
        drawn = {f"new_{name}": value for name, value in successor.items()}
        row = first(self._in_one, {**params, **drawn, "new_scope": scope})
        return None if row is None else Spent(row, row.successor_id)


class PostgresCodes(SqlCodes):
    """Codes on PostgreSQL: a redemption is one statement, behind the member's and the app's
    advisory locks."""

    def __init__(self) -> None:
        self._redeem = FoldedSpendAndStore(*REDEMPTION)


class PostgresTokens(SqlTokens):
    """Tokens on PostgreSQL: a rotation is one statement behind the member's and the app's advisory
    locks, and ending grants takes the member's (or the app's) exclusively first."""

    def __init__(self) -> None:
        self._rotate = FoldedSpendAndStore(*ROTATION)

    def _held_while_ending(self, codes: Delete, user_id: str | None, client_id: int | None) -> Delete:
        """The codes' DELETE, taking the member's advisory lock (the app's, when no member is named)
        exclusively first: it waits for every redemption and rotation of theirs under way, which hold
        it shared until they commit, and from then until this transaction commits none can start.
        The token UPDATE, a later statement, then sees (and revokes) every pair those stored."""
        key = member_lock(user_id) if user_id is not None else app_lock(client_id)
        held = select(func.pg_advisory_xact_lock(*key).label("held")).cte("held")
        # A one-time filter: PostgreSQL takes the lock before it looks at any code, codes or none.
        return codes.where(exists(select(held.c.held)))


# -- a login started ----------------------------------------------------------------------------------


def _started_in_one() -> Select[Any]:
    """`start`'s statement (binds `login_`, `event_` + each column, `request_id`)."""
    login_columns = [c.name for c in _sessions.columns if c.name not in ("id", "ended_at")]  # a new session
    inserted = (
        _sessions.insert()
        .values({c: bindparam(f"login_{c}", type_=_sessions.c[c].type) for c in login_columns})
        .returning(_sessions.c.id)
        .cte("started")
    )
    event_columns = [c.name for c in _events.columns if c.name != "id"]
    logged = _events.insert().from_select(event_columns, rows_for_each(inserted, _events, event_columns, "event_"))
    attached = (
        _requests.update()
        .where(_requests.c.id == bindparam("request_id"))
        .values(login_session_id=select(inserted.c.id).scalar_subquery(), user_id=bindparam("login_user_id"))
    )
    return select(inserted.c.id).add_cte(logged.cte("logged"), attached.cte("attached"))


_STARTED_IN_ONE = _started_in_one()


class PostgresLogins(SqlLogins):
    """Logins on PostgreSQL: a start with its audit line is one statement."""

    def start(
        self,
        session_id: str,
        member: Member,
        values: dict[str, Any],
        event: dict[str, Any] | None = None,
        attach_to: str | None = None,
    ) -> Login:
        if event is None:
            return super().start(session_id, member, values, event, attach_to)
        params = prefixed("login_", login_row(session_id, member, values)) | prefixed("event_", event)
        row = first(_STARTED_IN_ONE, {**params, "request_id": attach_to})
        assert row is not None  # the INSERT's row, always one
        return started(int(row[0]), member, values)


# -- a consent page's answer -------------------------------------------------------------------------


def _answered_in_one() -> Select[Any]:
    """`answer`'s statement: the UPDATE that consumes, with the three INSERTs selecting from its
    RETURNING, so they write a row only when it matched."""
    consent_columns = ["user_id", "client_id", "scope", "granted_at", "updated_at"]
    remembered = postgresql.insert(_consents).from_select(
        consent_columns, rows_for_each(CONSUMED, _consents, consent_columns, "consent_")
    )
    remembered = remembered.on_conflict_do_update(
        index_elements=["user_id", "client_id"],
        set_={"scope": remembered.excluded.scope, "updated_at": remembered.excluded.updated_at},
    )
    event_columns = [c.name for c in _events.columns if c.name != "id"]
    logged = _events.insert().from_select(event_columns, rows_for_each(CONSUMED, _events, event_columns, "event_"))
    code_columns = [c.name for c in _codes.columns if c.name not in ("id", "used_at")]  # a new code
    issued = _codes.insert().from_select(code_columns, rows_for_each(CONSUMED, _codes, code_columns, "code_"))
    return (
        select(func.count())
        .select_from(CONSUMED)
        .add_cte(remembered.cte("remembered"), logged.cte("logged"), issued.cte("issued"))
    )


_ANSWERED_IN_ONE = _answered_in_one()


class PostgresPendingRequests(SqlPendingRequests):
    """Pending requests on PostgreSQL: an answer is one statement."""

    def answer(self, uid: str, consent: dict[str, Any], event: dict[str, Any], code: dict[str, Any]) -> bool:
        params = {"uid": uid, "now": consent["updated_at"]}
        params |= prefixed("consent_", consent) | prefixed("event_", event) | prefixed("code_", code)
        answered = first(_ANSWERED_IN_ONE, params)  # the count of requests it consumed: 1 or 0
        return answered is not None and answered[0] == 1


# -- a profile put on a roster ------------------------------------------------------------------------


class PostgresRosters(SqlRosters):
    """Rosters on PostgreSQL: its spelling of an insert that ignores a duplicate."""

    def add(self, roster_id: str, profile_id: str, at: datetime) -> bool:
        statement = postgresql.insert(RosterProfile.__table__).values(
            roster_id=roster_id, profile_id=profile_id, added_at=at
        )
        return bool(run(statement.on_conflict_do_nothing()).rowcount)


class PostgresMeter(SqlMeter):
    """The meter on PostgreSQL. Each database connection counts in a shard of its own, numbered by
    its server process (`pg_backend_pid()`, unique among the connections open at any moment): a
    connection runs one transaction at a time, so no count ever waits on another's row lock,
    however many processes count one key. A day's rows are one per connection that counted on it,
    until housekeeping folds the past days (`fold`). Before the request has written anything the
    count is a transaction of its own (`on_its_own`): one round trip, committed before it answers,
    so the count of a request whose response was sent has been committed, whatever becomes of
    the process after."""

    def count(self, key_id: str, day: date) -> None:
        with on_its_own():
            first(_COUNT, {"key_id": key_id, "day": day})

    def _add(self, key_id: str, day: date, calls: int) -> None:
        run(adding(postgresql.insert(ApiUsage.__table__).values(key_id=key_id, day=day, shard=FOLDED, count=calls)))


_COUNT = adding(
    postgresql.insert(ApiUsage.__table__).values(
        key_id=bindparam("key_id"), day=bindparam("day"), shard=func.pg_backend_pid(), count=1
    )
)


class PostgresAuditTrail(SqlAuditTrail):
    """The audit trail on PostgreSQL, where a timestamp carries its zone: the day is taken in UTC."""

    def _day(self, column: Any) -> ColumnElement[str]:
        # literals, not bound parameters: the same expression in SELECT and GROUP BY must be
        # identical for PostgreSQL, and two binds ($1, $3) would make them differ
        return func.to_char(func.timezone(literal_column("'UTC'"), column), literal_column("'YYYY-MM-DD'"))


class PostgresBilling(SqlBilling):
    """Billing on PostgreSQL: its spelling of the inserts that ignore a duplicate (an account made
    twice by two first requests, an entry or a provider event posted twice). The account's row lock
    (`lock`, an UPDATE) is the same statement on both databases."""

    def _insert_account(self, values: dict[str, Any]) -> None:
        statement = postgresql.insert(BillingAccount.__table__).values(**values)
        run(statement.on_conflict_do_nothing(index_elements=["owner_id"]))

    def _insert_entry(self, values: dict[str, Any]) -> bool:
        table = BillingEntry.__table__
        statement = postgresql.insert(table).values(**values).on_conflict_do_nothing(index_elements=["idempotency"])
        return run(statement.returning(table.c.id)).first() is not None  # no row back: it was there

    def _insert_event(self, values: dict[str, Any]) -> bool:
        table = BillingWebhookEvent.__table__
        statement = postgresql.insert(table).values(**values).on_conflict_do_nothing(index_elements=["event_id"])
        return run(statement.returning(table.c.event_id)).first() is not None


# -- apps and presented keys kept between requests ------------------------------------------------


def row_cache_for(engine: Engine, seconds: float, connect_timeout: int) -> row_cache.RowCache[Any] | None:
    """The process's kept rows (apps, presented keys), each kept for `seconds` (0: none, as behind a
    pooler that does not carry LISTEN); a change this process writes drops them at once."""
    if seconds <= 0:
        return None
    cache: row_cache.RowCache[Any] = row_cache.RowCache(row_cache.listener_connect(engine, connect_timeout), seconds)
    event.listen(engine, "after_cursor_execute", row_cache.forget_on_write(cache))
    return cache


def _kept(
    cache: row_cache.RowCache[Any],
    key: row_cache.Key,
    read: Callable[[], R | None],
    filed_under: Callable[[R], tuple[row_cache.Key, ...]],
) -> R | None:
    """The copy under `key`, else `read()` - kept under each of `filed_under(row)` if it read a
    committed row (a read inside a transaction, which may see the request's own uncommitted change,
    is not)."""
    kept: R | None = cache.get(key)
    if kept is not None:
        return kept
    generation = cache.generation
    written = has_written()
    found = read()
    if found is not None and not written:
        cache.keep(found, generation, *filed_under(found))
    return found


def _app_keys(app: App) -> tuple[row_cache.Key, ...]:
    """One read of an app files it under both keys it is asked by."""
    return ("client_id", app.client_id), ("id", app.id)


class PostgresApps(SqlApps):
    """Apps on PostgreSQL: read from this process's copy while the database vouches for it
    (app/store/row_cache.py)."""

    def __init__(self, cache: row_cache.RowCache[Any] | None) -> None:
        self.cache = cache

    def keep_agent(self, client_id: str, values: dict[str, Any]) -> RegisteredApp:
        """As SqlApps', safe when two first sign-ins of one agent race: the insert runs under a
        savepoint, and the one that loses to the other's row refreshes that row instead (SQLite
        serializes writers, so only PostgreSQL meets the race)."""
        try:
            with unit_of_work().connection().begin_nested():
                return super().keep_agent(client_id, values)
        except IntegrityError:
            return super().keep_agent(client_id, values)

    def _read(self, key: Key, statement: Select[Any], params: dict[str, Any]) -> App | None:
        cache = self.cache
        if cache is None:
            return super()._read(key, statement, params)
        return _kept(cache, key, lambda: super(PostgresApps, self)._read(key, statement, params), _app_keys)


class PostgresApiKeys(SqlApiKeys):
    """API keys on PostgreSQL: the key a request presents, with its owner, read from this
    process's copy while the database vouches for it (app/store/row_cache.py: a change to the key
    or to its owner - a revocation, a rotation, a suspension, a role taken away - drops it)."""

    def __init__(self, cache: row_cache.RowCache[Any] | None) -> None:
        self.cache = cache

    def by_digest(self, digest: str) -> ApiKey | None:
        if self.cache is None:
            return super().by_digest(digest)
        key = ("api_key", digest)
        return _kept(self.cache, key, lambda: super(PostgresApiKeys, self).by_digest(digest), lambda _found: (key,))
