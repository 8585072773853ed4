"""Health probes for the load balancer and the orchestrator.

`/healthz` says the process answers (liveness: restart me if not); it touches nothing else.
`/readyz` says this process can serve sign-ins now (readiness: send me traffic): the database
answers, its schema is at the migrations' head (or ahead of it, during a deploy), and a signing
key is loaded. A failing check
names itself, but never the reason's details (hosts, SQL): those go to the log. With a catalog
database of its own (CATALOG_DATABASE_URL), `/readyz` also says whether that answers and is a
replica - beside the checks, not among them: the sign-in never reads it, so a replica that is down
takes no process out of the load balancer (its catalog calls answer 503 meanwhile).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from alembic.script import ScriptDirectory
from flask import Blueprint, Flask, Response, current_app, jsonify
from sqlalchemy import Engine, text

from app.core.config import PROJECT_ROOT
from app.core.extensions import db
from app.protocol.jwks import keystore
from app.store.catalog_database import catalog_engine

log = logging.getLogger(__name__)
bp = Blueprint("health", __name__)


@dataclass(frozen=True)
class Migrations:
    """What this process's code knows of the schema (read once at start-up)."""

    heads: frozenset[str]  # the revisions the code expects the database to be at
    known: frozenset[str]  # every revision in this code's migrations


def migration_heads(directory: Path = PROJECT_ROOT / "migrations") -> Migrations:
    scripts = ScriptDirectory(str(directory))
    return Migrations(frozenset(scripts.get_heads()), frozenset(r.revision for r in scripts.walk_revisions()))


def _json(body: dict, status: int) -> Response:
    response = jsonify(body)
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/healthz")
def healthz() -> Response:
    return _json({"status": "ok"}, 200)


def check_database() -> dict:
    db.session.execute(text("SELECT 1"))
    return {"ok": True}


def check_migrations() -> dict:
    """Ready at this code's head, and also when the database is ahead of it: a deploy runs
    `flask db upgrade` before starting the new version, and the processes still running the old
    one must keep serving until they are replaced (migrations add, they do not break the previous
    release). Not ready when the database is behind: this code would need what is not there yet."""
    migrations: Migrations = current_app.extensions["migration_heads"]
    current = set(db.session.scalars(text("SELECT version_num FROM alembic_version")))
    ahead = bool(current) and not current & migrations.known
    return {"ok": current == migrations.heads or ahead, "current": sorted(current), "head": sorted(migrations.heads)}


def check_signing_key() -> dict:
    kid, _ = keystore.signing_key()
    return {"ok": True, "kid": kid}


CHECKS = {"database": check_database, "migrations": check_migrations, "signing_key": check_signing_key}


def check_catalog_database(engine: Engine) -> dict:
    """The catalog's own database answers; `replica`: it is a standby (in recovery), as it should be."""
    with engine.connect() as connection:
        standby = connection.scalar(text("SELECT pg_is_in_recovery()"))
    return {"ok": True, "replica": bool(standby)}


@bp.get("/readyz")
def readyz() -> Response:
    results: dict[str, dict] = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except Exception:  # a probe reports failures, it does not raise them
            log.warning("readiness check %s failed", name, exc_info=True)
            try:
                db.session.rollback()
            except Exception:  # the connection is gone; the pool replaces it on the next checkout
                log.debug("rollback after a failed check failed too", exc_info=True)
            results[name] = {"ok": False, "error": "unavailable"}
    ready = all(r["ok"] for r in results.values())
    body: dict = {"status": "ok" if ready else "unavailable", "checks": results}
    catalog = catalog_engine()
    if catalog is not None:
        try:
            body["catalog_database"] = check_catalog_database(catalog)
        except Exception:  # reported, and it decides nothing (the module's docstring)
            log.warning("the catalog's database does not answer", exc_info=True)
            body["catalog_database"] = {"ok": False, "error": "unavailable"}
    return _json(body, 200 if ready else 503)


def init_health(app: Flask) -> None:
    app.extensions["migration_heads"] = migration_heads()
    app.register_blueprint(bp)
