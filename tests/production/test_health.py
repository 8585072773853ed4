"""Liveness and readiness probes: /healthz answers while the process runs; /readyz only when the
database answers at the migrations' head and a signing key is loaded."""

from __future__ import annotations

import requests
from sqlalchemy import text

from app.core.extensions import db
from app.protocol.jwks import keystore


def test_healthz_answers_ok(live_server):
    response = requests.get(live_server("/healthz"), timeout=30)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Content-Type"] == "application/json"


def test_readyz_reports_each_check(live_server):
    response = requests.get(live_server("/readyz"), timeout=30)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"] == {"ok": True}
    heads = body["checks"]["migrations"]
    assert heads["ok"] is True and heads["current"] == heads["head"] and len(heads["head"]) == 1
    assert body["checks"]["signing_key"] == {"ok": True, "kid": keystore.snapshot().signing_kid}
    assert response.headers["Cache-Control"] == "no-store"


def readyz_at_revision(app, revision: str):
    """/readyz while the database says it is at `revision` (put back after)."""
    with db.engine.begin() as conn:
        real = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
        conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": revision})
    try:
        return app.test_client().get("/readyz"), real
    finally:
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": real})


def test_readyz_fails_when_the_schema_is_behind(app):
    """A revision this code knows, older than its head: the code needs what is not there yet."""
    response, real = readyz_at_revision(app, "0001_core")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable"
    assert body["checks"]["migrations"] == {"ok": False, "current": ["0001_core"], "head": [real]}
    assert body["checks"]["database"] == {"ok": True}


def test_readyz_stays_ready_when_a_newer_release_migrated_ahead(app):
    """A deploy runs `flask db upgrade` before starting the new version: the processes still
    running this one must keep serving (not all drop out of the load balancer at once)."""
    response, real = readyz_at_revision(app, "9999_from_a_newer_release")
    assert response.status_code == 200
    assert response.get_json()["checks"]["migrations"] == {
        "ok": True,
        "current": ["9999_from_a_newer_release"],
        "head": [real],
    }


def test_readyz_fails_without_a_loadable_signing_key(app, monkeypatch, tmp_path):
    """The private key file is missing from KEYS_DIR: the process cannot sign ID tokens."""
    monkeypatch.setattr(keystore, "keys_dir", tmp_path)
    monkeypatch.setattr(keystore, "_private", {})
    keystore.invalidate()
    try:
        response = app.test_client().get("/readyz")
    finally:
        keystore.invalidate()
    assert response.status_code == 503
    checks = response.get_json()["checks"]
    assert checks["signing_key"] == {"ok": False, "error": "unavailable"}
    assert checks["database"]["ok"] and checks["migrations"]["ok"]
    assert str(tmp_path) not in response.get_data(as_text=True)  # no internals in the probe's body
