"""The benchmark's prepared dataset: a fresh schema (built by the migrations), a signing key, the
benchmark's own confidential app and member, and filler rows so the measured requests run
against tables of a realistic size.

Run as `python -m bench.dataset --database-url URL --keys-dir DIR [--scale N] --json`; it prints
the credentials the load generator needs. The filler is sized by `--scale` (1 = 100 apps,
1,000 members, 10,000 stored tokens, ...; 10 = ten times that), so "does the cost grow with the
rows?" is one flag away.

The demo catalog (app/services/catalog_seed.py) is built beside it, 120,000 credits by default
(`--catalog-credits`), and the benchmark member is linked to its most credited profile, so the
`/v1` reads page through thousands of the member's own credits in a catalog of realistic size.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from collections.abc import Iterator
from datetime import timedelta
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from anywhere: the project is not an installed package
    sys.path.insert(0, str(ROOT))

from sqlalchemy import MetaData, func, insert, inspect, select, text  # noqa: E402

REDIRECT_URI = "http://127.0.0.1:7199/cb"  # the redirect URI the shared load harness uses
BENCH_CLIENT_ID = "bench-conf"
BENCH_EMAIL = "bench@example.test"
BENCH_PASSWORD = "correct horse battery staple"

# The benchmark fires thousands of token requests from one client, logins from one address and
# /v1 reads with one token: the throttles and the /v1 budget would answer them with 429.
BENCH_LIMITS = {
    "TOKEN_CLIENT_LIMIT": "1000000 per minute",
    "LOGIN_IP_LIMIT": "1000000 per minute",
    "API_RATE_LIMIT_PER_MINUTE": 100_000_000,
}
# A bench-only hasher: argon2id at its minimum cost, to take the password hash off the round trip
# (the peer hashes no password). The real cost is measured beside it.
CHEAP_ARGON2 = {"ARGON2_TIME_COST": 1, "ARGON2_MEMORY_COST": 8, "ARGON2_PARALLELISM": 1}

# Filler rows at scale 1; every count is multiplied by --scale.
FILLER = {"apps": 100, "members": 1_000, "tokens": 10_000, "codes": 1_000, "sessions": 1_000, "consents": 1_000}


def server_settings(database_url: str, keys_dir: str, issuer: str = "http://127.0.0.1:9", **extra) -> dict:
    """Settings shared by the dataset step and the server it is prepared for."""
    return {
        "APP_ENV": "development",
        "ISSUER_URL": issuer,
        "DATABASE_URL": database_url,
        "KEYS_DIR": keys_dir,
        "SECRET_KEY": "bench-" + secrets.token_hex(24),
        **extra,
    }


def reset_schema(engine) -> None:
    """Drop every table (a previous run on the same PostgreSQL database); migrations rebuild."""
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            for table in inspect(engine).get_table_names():
                conn.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    else:
        meta = MetaData()
        meta.reflect(bind=engine)
        meta.drop_all(bind=engine)


def ensure_postgres_database(url: str) -> None:
    """Create the benchmark's PostgreSQL database when it does not exist yet."""
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(url)
    admin = f"host={u.host or '127.0.0.1'} port={u.port or 5432} user={u.username or 'postgres'} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (u.database,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{u.database}"')


YEAR_MINUTES = 365 * 24 * 60
CHUNK = 10_000  # rows per INSERT batch: memory stays flat at any scale


def _chunks(rows: Iterator[dict], size: int = CHUNK) -> Iterator[list[dict]]:
    while chunk := list(islice(rows, size)):
        yield chunk


# From this scale on PostgreSQL, members and tokens are made by the database itself (generate_series):
# streaming ten million rows through Python would take the best part of an hour.
SERVER_SIDE_SCALE = 100


def _members_in_database(count: int, password_hash: str, now) -> None:
    from app.core.extensions import db

    db.session.execute(
        text(
            "INSERT INTO users (id, sub, email, email_verified, name, password_hash, tier, role, created_at, updated_at) "
            "SELECT gen_random_uuid()::text, gen_random_uuid()::text, 'filler-' || g || '@example.test', true, "
            "'Filler Member ' || g, :hash, CASE WHEN g % 5 = 0 THEN 'pro' ELSE 'basic' END, 'member', :now, :now "
            "FROM generate_series(0, :count - 1) AS g"
        ),
        {"hash": password_hash, "count": count, "now": now},
    )
    db.session.commit()


def _tokens_in_database(count: int, client_pk: int, now, per_statement: int = 1_000_000) -> None:
    """The same rows as `add_filler`'s tokens (a year of issue times, half with a refresh token, a
    tenth revoked), each member and app picked by row number, a million rows a statement."""
    from app.core.extensions import db

    statement = text(
        "WITH m AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM users WHERE email LIKE 'filler-%'), "
        "a AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM clients WHERE id <> :pk), "
        "mc AS (SELECT count(*) AS n FROM m), ac AS (SELECT count(*) AS n FROM a) "
        "INSERT INTO tokens (client_id, user_id, grant_id, scope, access_token_hash, refresh_token_hash, "
        "issued_at, access_expires_at, refresh_expires_at, revoked_at, auth_time) "
        "SELECT a.id, m.id, gen_random_uuid()::text, 'openid profile email offline_access', "
        "md5(random()::text) || md5(random()::text), "
        "CASE WHEN g % 2 = 0 THEN md5(random()::text) || md5(random()::text) END, "
        "t.issued, t.issued + interval '1 hour', CASE WHEN g % 2 = 0 THEN t.issued + interval '30 days' END, "
        "CASE WHEN g % 10 = 0 THEN CAST(:now AS timestamptz) END, t.issued "
        "FROM generate_series(CAST(:start AS bigint), CAST(:stop AS bigint) - 1) AS g CROSS JOIN mc CROSS JOIN ac "
        "CROSS JOIN LATERAL (SELECT CAST(:now AS timestamptz) - ((g * 7919) % :year) * interval '1 minute' AS issued) t "
        "JOIN m ON m.n = (g * 7) % mc.n JOIN a ON a.n = g % ac.n"
    )
    for start in range(0, count, per_statement):
        db.session.execute(
            statement,
            {
                "pk": client_pk,
                "now": now,
                "start": start,
                "stop": min(count, start + per_statement),
                "year": YEAR_MINUTES,
            },
        )
        db.session.commit()


def add_filler(scale: int, password_hash: str, client_pk: int) -> dict:
    """Bulk-insert filler rows, streamed in batches (core INSERTs: seconds at scale 10, minutes at
    scale 1,000 - a million members, ten million tokens). The tokens were issued over the past year,
    as a year of service leaves them: most are expired (what housekeeping purges), a tenth revoked,
    half with a refresh token."""
    from app.core.extensions import db
    from app.models import AuthorizationCode, Client, Consent, LoginSession, Token, User
    from app.models.base import new_uuid, sha256_hex, utcnow

    now = utcnow()
    counts = {k: v * scale for k, v in FILLER.items()}

    def random_hash() -> str:
        return os.urandom(32).hex()  # a random digest's shape: nothing will present its preimage

    def users() -> Iterator[dict]:
        for i in range(counts["members"]):
            yield {
                "id": new_uuid(),
                "sub": new_uuid(),
                "email": f"filler-{i}@example.test",
                "email_verified": True,
                "name": f"Filler Member {i}",
                "password_hash": password_hash,
                "tier": "pro" if i % 5 == 0 else "basic",
                "role": "member",
                "created_at": now,
                "updated_at": now,
            }

    in_database = db.engine.dialect.name == "postgresql" and scale >= SERVER_SIDE_SCALE
    user_ids: list[str] = []
    if in_database:
        _members_in_database(counts["members"], password_hash, now)
        user_ids = list(db.session.scalars(text("SELECT id FROM users WHERE email LIKE 'filler-%' ORDER BY id")))
    else:
        for chunk in _chunks(users()):
            db.session.execute(insert(User), chunk)
            user_ids.extend(row["id"] for row in chunk)
    apps = [
        {
            "client_id": secrets.token_hex(16),
            "client_secret_hash": sha256_hex(secrets.token_hex(32)),
            "name": f"Filler App {i}",
            "client_type": "confidential",
            "token_endpoint_auth_method": "client_secret_basic",
            "redirect_uris": [f"https://app{i}.example.com/cb"],
            "post_logout_redirect_uris": [],
            "allowed_scopes": "openid profile email offline_access credits:read",
            "require_pkce": True,
            "trusted": False,
            "status": "active",
            "created_at": now,
            "updated_at": now,
        }
        for i in range(counts["apps"])
    ]
    db.session.execute(insert(Client), apps)
    app_pks = list(db.session.scalars(db.select(Client.id).where(Client.id != client_pk)))

    def pick(seq, i):
        return seq[i % len(seq)]

    def tokens() -> Iterator[dict]:
        for i in range(counts["tokens"]):
            issued = now - timedelta(minutes=(i * 7919) % YEAR_MINUTES)
            refresh = i % 2 == 0
            yield {
                "client_id": pick(app_pks, i),
                "user_id": pick(user_ids, i * 7),
                "grant_id": new_uuid(),
                "scope": "openid profile email offline_access",
                "access_token_hash": random_hash(),
                "refresh_token_hash": random_hash() if refresh else None,
                "issued_at": issued,
                "access_expires_at": issued + timedelta(hours=1),
                "refresh_expires_at": issued + timedelta(days=30) if refresh else None,
                "revoked_at": now if i % 10 == 0 else None,
                "auth_time": issued,
            }

    if in_database:
        _tokens_in_database(counts["tokens"], client_pk, now)
    else:
        for chunk in _chunks(tokens()):
            db.session.execute(insert(Token), chunk)
            db.session.commit()
    db.session.execute(
        insert(AuthorizationCode),
        [
            {
                "code_hash": random_hash(),
                "client_id": pick(app_pks, i),
                "user_id": pick(user_ids, i * 3),
                "grant_id": new_uuid(),
                "redirect_uri": "https://example.com/cb",
                "scope": "openid",
                "code_challenge": secrets.token_hex(11),
                "code_challenge_method": "S256",
                "auth_time": now,
                "issued_at": now,
                "expires_at": now + timedelta(seconds=60),
                "used_at": now,
            }
            for i in range(counts["codes"])
        ],
    )
    for chunk in _chunks(
        {
            "session_hash": random_hash(),
            "user_id": pick(user_ids, i),
            "auth_time": now,
            "expires_at": now + timedelta(days=14),
            "ip": "127.0.0.1",
            "user_agent": "filler",
        }
        for i in range(counts["sessions"])
    ):
        db.session.execute(insert(LoginSession), chunk)
    for chunk in _chunks(
        {
            "user_id": pick(user_ids, i),
            "client_id": pick(app_pks, i // len(user_ids)),
            "scope": "openid profile email",
            "granted_at": now,
            "updated_at": now,
        }
        for i in range(min(counts["consents"], len(user_ids) * len(app_pks)))
    ):
        db.session.execute(insert(Consent), chunk)
    db.session.commit()
    return counts


CATALOG_CREDITS = 120_000


def prepare(
    database_url: str, keys_dir: str, scale: int = 1, argon2: dict | None = None, catalog_credits: int = CATALOG_CREDITS
) -> dict:
    """Build the dataset; returns what the load generator and the server need."""
    from flask_migrate import upgrade

    if database_url.startswith("postgresql"):
        ensure_postgres_database(database_url)
    from app import create_app
    from app.core.extensions import db
    from app.models import Credit
    from app.protocol.jwks import keystore
    from app.services.catalog_seed import build_catalog, profiles_by_credit_count
    from app.services.members import create_member
    from app.services.registration import NewClient, register_client

    app = create_app(server_settings(database_url, keys_dir, **(argon2 or {})))
    with app.app_context():
        reset_schema(db.engine)
        upgrade()
        keystore.ensure_key()
        client, secret = register_client(
            NewClient(
                name="Benchmark App",
                client_id=BENCH_CLIENT_ID,
                redirect_uris=[REDIRECT_URI],
                scope="openid profile email offline_access credits:read",
            )
        )
        profile_id, member_credits = None, 0
        if catalog_credits > 0:
            build_catalog(credits=catalog_credits)
            profile_id = profiles_by_credit_count(1)[0]
            member_credits = db.session.scalar(
                select(func.count()).select_from(Credit).where(Credit.profile_id == profile_id)
            )
        member = create_member(BENCH_EMAIL, "Bench Member", BENCH_PASSWORD, tier="pro", profile_id=profile_id)
        db.session.commit()  # the key, the app, the catalog and the member: the services only flush
        counts = add_filler(scale, member.password_hash, client.id) if scale > 0 else {}
        return {
            "database_url": database_url,
            "keys_dir": keys_dir,
            "client_id": client.client_id,
            "client_secret": secret,
            "redirect_uri": REDIRECT_URI,
            "username": BENCH_EMAIL,
            "password": BENCH_PASSWORD,
            "scale": scale,
            "filler": counts,
            "catalog_credits": catalog_credits,
            "member_credits": member_credits,
        }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--keys-dir", required=True)
    ap.add_argument("--scale", type=int, default=1, help="filler size multiplier (0: no filler)")
    ap.add_argument("--catalog-credits", type=int, default=CATALOG_CREDITS, help="demo catalog size (0: none)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)
    # The member's password is hashed with the ARGON2_* settings of the environment, like the server.
    argon2 = {k: int(v) for k, v in os.environ.items() if k.startswith("ARGON2_")}
    result = prepare(a.database_url, a.keys_dir, a.scale, argon2, a.catalog_credits)
    print(json.dumps(result, indent=None if a.json else 2))


if __name__ == "__main__":
    main()
