"""A statement's time bound on PostgreSQL: the connection's `statement_timeout` (app/store/time_bound.py),
and with it one core: a bounded call's statements get no parallel workers
(`max_parallel_workers_per_gather` 0), so the one search the server runs at a time
(app/services/catalog_guard.py) never takes more than one of the database's cores from the sign-in;
and each statement planned for its own values (`plan_cache_mode` force_custom_plan). The driver
prepares a statement sent five times, and after five runs PostgreSQL may keep one generic plan for
it, chosen without the values: for a search, whose best plan depends on the keyword (a word in
sixteen thousand names or in none), that plan walked the popularity index testing every name -
seven times slower than the plan for the word at hand. The sign-in keeps its generic plans.

The setting is made at session level, outside any transaction, so it stays on the connection
whatever the request then commits or rolls back, and the connection's pool record remembers it:
a connection already bound as wanted costs nothing, one that is not costs one statement, sent
straight on the driver's cursor (no transaction begins for it: app/store/unit_of_work.py). If the
request is already inside a transaction, the bound is set for that transaction only (SET LOCAL
semantics) and not remembered. A statement stopped by it fails with SQLSTATE 57014
(`query_canceled`); the connection stays usable."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from psycopg.errors import QueryCanceled
from psycopg.pq import TransactionStatus

_SET = (
    "SELECT set_config('statement_timeout', %s, %s), set_config('max_parallel_workers_per_gather', '0', %s), "
    "set_config('plan_cache_mode', 'force_custom_plan', %s)"
)
_RESET = "RESET statement_timeout; RESET max_parallel_workers_per_gather; RESET plan_cache_mode"  # one simple query
_CARRIES = "credits_id.statement_timeout_ms"  # in the pool record's info: the bound set on the connection


class PostgresBound:
    def conform(self, dbapi_connection: Any, info: MutableMapping[str, Any], bound_ms: int | None) -> None:
        if info.get(_CARRIES) == bound_ms:
            return
        if dbapi_connection.info.transaction_status != TransactionStatus.IDLE:
            if bound_ms is not None:  # for the open transaction only: gone at its commit or rollback
                with dbapi_connection.cursor() as cursor:
                    cursor.execute(_SET, (f"{bound_ms}ms", True, True, True))
            return
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True  # a session setting, outside any transaction
        try:
            with dbapi_connection.cursor() as cursor:
                if bound_ms is None:
                    cursor.execute(_RESET)
                else:
                    cursor.execute(_SET, (f"{bound_ms}ms", False, False, False))
        finally:
            dbapi_connection.autocommit = autocommit
        if bound_ms is None:
            info.pop(_CARRIES, None)
        else:
            info[_CARRIES] = bound_ms

    def is_timeout(self, error: BaseException) -> bool:
        return isinstance(error, QueryCanceled)

    def after(self, dbapi_connection: Any, info: MutableMapping[str, Any]) -> None:
        """Nothing now: the next unbounded request to take the connection resets it (a stream of
        catalog calls keeps it bound without a round trip)."""
