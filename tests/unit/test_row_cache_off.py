"""SQLite sends no notice of a change, so no process keeps an app there: every request reads it
(the PostgreSQL side is tests/production/test_row_cache.py)."""

from __future__ import annotations

import pytest

from app.core.extensions import db
from app.store.row_cache import EXTENSION


def test_on_sqlite_every_request_reads_its_app(app):
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL keeps apps: tests/production/test_row_cache.py")
    assert EXTENSION not in app.extensions and not hasattr(app.extensions["credits_id.store"].apps, "cache")
