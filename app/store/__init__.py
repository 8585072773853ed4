"""The store: the one port between the application and its database.

    store()            the Store: one typed interface per aggregate (app/store/ports.py) -
                       apps, codes, tokens, logins, pending requests, consents, rosters, API
                       keys, the meter, the audit trail, expiry, the catalog and its reads, billing
    unit_of_work.py    one connection and transaction per request and per command; commit()
    statements.py      how a statement runs (first: straight on the cursor; run: SQLAlchemy's)
    apps, codes, tokens, logins, pending_requests, consents, members
                       the SQL implementation of each aggregate, with its statements (built once)
                       and the frozen records it hands back
    postgresql.py      what PostgreSQL does better: several writes in one statement, the row locks
                       that make revocation win every race, rows kept between requests
    row_cache.py       rows kept between requests (apps, presented keys), vouched for by LISTEN/NOTIFY
    expiry.py          when a row can no longer be used, and its deletion in batches (housekeeping)
    rosters.py         members' rosters of catalog profiles, and a workspace key's reach
    api_keys.py        API keys: the one a request presents (by its hash), the ones people manage
    meter.py           the api_requests meter's counters, one per key and UTC day
    audit_trail.py     the audit trail: events appended with their change, paged newest first,
                       counted by day (the console's activity pictures)
    key_activity.py    each API key's recent requests (the console's key page), cut to the newest few
    catalog.py         catalog search, type-ahead, collaborators (SQLite's FTS5 text index);
                       catalog_postgresql.py: the same through pg_trgm and full-text GIN indexes
    catalog_reads.py   the catalog's other reads (/v1, the tool server, the widget): profiles,
                       tracks and albums by their identifiers, credit pages, chart rows, album
                       credits, the roles, the rows of search hits and of the widget's cards
    billing.py         developers' prepaid accounts: the append-only ledger, payments, provider events
    time_bound.py      how long a catalog call's statements may run (time_bound_postgresql.py:
                       statement_timeout; SQLite: the progress handler)
    catalog_database.py  the catalog's reads on a read replica of their own (CATALOG_DATABASE_URL)

The implementations are chosen once, when the app is created (`init_store`): no dialect is tested
anywhere else, and SQLite (the local default) and PostgreSQL run the same code but where
postgresql.py says otherwise. The tables are the models' (app/models).
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app

from app.core.extensions import db
from app.store import postgresql as pg
from app.store import row_cache
from app.store.api_keys import SqlApiKeys
from app.store.apps import SqlApps
from app.store.audit_trail import SqlAuditTrail
from app.store.billing import SqlBilling
from app.store.catalog import SqlCatalog
from app.store.catalog_database import init_catalog_database
from app.store.catalog_postgresql import PostgresCatalog
from app.store.catalog_reads import SqlCatalogReads
from app.store.codes import SqlCodes
from app.store.consents import SqlConsents
from app.store.expiry import SqlExpiry
from app.store.key_activity import SqlKeyActivity
from app.store.logins import SqlLogins
from app.store.meter import SqlMeter
from app.store.pending_requests import SqlPendingRequests
from app.store.ports import (
    ApiKeys,
    Apps,
    AuditTrail,
    Billing,
    Catalog,
    CatalogReads,
    Codes,
    Consents,
    Expiry,
    KeyActivity,
    Logins,
    Meter,
    PendingRequests,
    Rosters,
    Tokens,
)
from app.store.rosters import SqlRosters
from app.store.time_bound import init_time_bound
from app.store.tokens import SqlTokens

EXTENSION = "credits_id.store"


@dataclass(frozen=True, slots=True)
class Store:
    """The database as the application sees it, one aggregate per attribute."""

    apps: Apps
    codes: Codes
    tokens: Tokens
    logins: Logins
    requests: PendingRequests
    consents: Consents
    rosters: Rosters
    api_keys: ApiKeys
    meter: Meter
    audit: AuditTrail
    expiry: Expiry
    catalog: Catalog
    billing: Billing
    key_activity: KeyActivity
    catalog_reads: CatalogReads


def sql_store() -> Store:
    """The SQL implementation (SQLite's, and the base of PostgreSQL's)."""
    apps = SqlApps()
    return Store(
        apps,
        SqlCodes(),
        SqlTokens(),
        SqlLogins(),
        SqlPendingRequests(apps),
        SqlConsents(),
        SqlRosters(),
        SqlApiKeys(),
        SqlMeter(),
        SqlAuditTrail(),
        SqlExpiry(),
        SqlCatalog(),
        SqlBilling(),
        SqlKeyActivity(),
        SqlCatalogReads(),
    )


def init_store(app: Flask) -> None:
    """Choose the implementation for the app's database, once."""
    with app.app_context():
        engine = db.engine
    if engine.dialect.name == "postgresql":
        kept = pg.row_cache_for(
            engine, float(app.config["APP_CACHE_SECONDS"]), int(app.config["DATABASE_CONNECT_TIMEOUT"])
        )
        if kept is not None:  # filed for inspection too (tests, an operator's shell)
            app.extensions[row_cache.EXTENSION] = kept
        apps = pg.PostgresApps(kept)
        chosen = Store(
            apps,
            pg.PostgresCodes(),
            pg.PostgresTokens(),
            pg.PostgresLogins(),
            pg.PostgresPendingRequests(apps),
            SqlConsents(),
            pg.PostgresRosters(),
            pg.PostgresApiKeys(kept),
            pg.PostgresMeter(),
            pg.PostgresAuditTrail(),
            SqlExpiry(),
            PostgresCatalog(),
            pg.PostgresBilling(),
            SqlKeyActivity(),  # the same statements: nothing PostgreSQL does better here
            SqlCatalogReads(),  # likewise
        )
    else:
        chosen = sql_store()
    app.extensions[EXTENSION] = chosen
    init_time_bound(app, engine)  # catalog calls' statements bounded (app/store/time_bound.py)
    init_catalog_database(app)  # the catalog's reads on a replica of their own, if there is one


def store() -> Store:
    """The app's store (init_store chose it)."""
    chosen: Store = current_app.extensions[EXTENSION]
    return chosen
