"""The protocol store: every statement that reads or writes protocol state.

Apps (as the protocol sees them, and as the console, the CLI, the account page and the ledger
manage them), authorization codes, tokens, login sessions and pending sign-in requests are read
and written here and nowhere else, as SQLAlchemy Core statements built once (SQLAlchemy then
computes each statement's cache key once, not per request) that hand back frozen records. The ORM's identity map and unit of work cost about three times the CPU of a Core
statement, and the protocol needs neither: it reads a row, decides, and writes one statement. The
statements run on the ORM session's connection (`app.store.database.execute`), inside its transaction,
without passing through the session's own `execute`. The hottest ones (a bearer token's read, an
app's read before the request has written, the token endpoint's spend-and-store, a sign-in's
pending request and login) are compiled by SQLAlchemy and run straight on the DBAPI cursor
(`app.store.database.read_row`, `run_first`): about 100 µs less CPU a statement than SQLAlchemy's
execution path around them.

A lookup and its single-use mark are one `UPDATE ... RETURNING` (a code redeemed, a refresh token
rotated, a sign-in request consumed), so exactly one concurrent caller gets the row. Every
function runs in the caller's transaction and never commits: the endpoint or page that called it
owns the unit of work. The tables themselves are defined by the models in `app.models`; outside
this package and the models no module touches the ORM class `Client` (tests/unit/test_clients_store.py).

    clients       an app by its client id, as the protocol needs it
    app_cache     on PostgreSQL, apps kept between requests while LISTEN/NOTIFY vouches for them
    registry      registering and managing apps: insert, change, secrets, status, the lists
    members       the member beside a code, token or session (what claims and tiers need)
    codes         issue, redeem (one statement), find a spent one
    tokens        issue, bearer lookup, rotate (one statement), revoke, narrow, end grants
    sessions      the browser's login session: find, start, end, touch
    interactions  a parked authorization request: park, find, attach a login, consume
    expiry        when a row can no longer be used (what housekeeping may delete)
    rosters       members' rosters of catalog profiles, and the workspace keys' reach check
"""
