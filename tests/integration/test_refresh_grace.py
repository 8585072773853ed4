"""The refresh-rotation grace window: off by default; when on, a retried refresh within the window
gets the same response; outside it (or once the new token was used), reuse revokes the family."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from sqlalchemy import func

from app.core.config import ConfigError, check_settings, load_settings
from app.core.extensions import db
from app.models import RefreshReplay, Token
from app.models.base import utcnow
from app.protocol import refresh_grace
from app.store import store
from tests.conftest import free_port, start_server
from tests.issued import issue, post_as

GRACE = 30
REVOKE = "/api/auth/oauth2/revoke"


@pytest.fixture(scope="module")
def grace_server(app, settings, tmp_path_factory):
    """A second server process over the same database, with the grace window on."""
    port = free_port()
    server_settings = {**settings, "ISSUER_URL": f"http://127.0.0.1:{port}"}
    log_path = tmp_path_factory.mktemp("grace") / "server.log"
    proc = start_server(server_settings, port, log_path, REFRESH_GRACE_SECONDS=str(GRACE))
    yield server_settings["ISSUER_URL"]
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def family(refresh_token: str) -> list[Token]:
    db.session.remove()
    grant_id = store().tokens.find_refresh(refresh_token).grant_id
    return db.session.scalars(db.select(Token).where(Token.grant_id == grant_id).order_by(Token.id)).all()


def test_off_by_default_a_retry_revokes_the_family(live_server):
    issued = issue(live_server.url)
    first = issued.rp.refresh(issued.refresh_token)
    assert first.status_code == 200
    retry = issued.rp.refresh(issued.refresh_token)
    assert retry.status_code == 400 and retry.json()["error"] == "invalid_grant"
    assert all(row.revoked_at is not None for row in family(issued.refresh_token))
    db.session.remove()
    assert db.session.scalar(db.select(func.count()).select_from(RefreshReplay)) == 0  # nothing kept when off


def test_a_retry_within_the_window_gets_the_same_response(grace_server):
    issued = issue(grace_server)
    first = issued.rp.refresh(issued.refresh_token)
    assert first.status_code == 200, first.text

    retry = issued.rp.refresh(issued.refresh_token)

    assert retry.status_code == 200, retry.text
    assert retry.json() == first.json()  # same access, refresh and ID token
    assert retry.headers["Cache-Control"] == "no-store"
    rows = family(issued.refresh_token)
    assert len(rows) == 2  # no new pair was minted by the retry
    assert all(row.revoked_at is None for row in rows)
    # The replayed refresh token is the live one.
    assert issued.rp.refresh(first.json()["refresh_token"]).status_code == 200


def test_the_sealed_response_is_not_readable_from_the_database(grace_server, app, monkeypatch):
    monkeypatch.setitem(app.config, "REFRESH_GRACE_SECONDS", GRACE)
    issued = issue(grace_server)
    body = issued.rp.refresh(issued.refresh_token).json()
    old = store().tokens.find(family(issued.refresh_token)[0].id)
    row = db.session.get(RefreshReplay, old.id)
    assert row is not None
    sealed = bytes(row.sealed)
    for secret in (body["access_token"], body["refresh_token"], body["id_token"]):
        assert secret.encode() not in sealed
    assert refresh_grace.replay(old, "a-guessed-refresh-token") is None  # wrong key: nothing
    assert refresh_grace.replay(old, issued.refresh_token) == body  # the presented token opens it


def test_once_the_new_token_was_used_a_retry_is_reuse(grace_server):
    issued = issue(grace_server)
    first = issued.rp.refresh(issued.refresh_token).json()
    assert issued.rp.refresh(first["refresh_token"]).status_code == 200
    retry = issued.rp.refresh(issued.refresh_token)
    assert retry.status_code == 400 and retry.json()["error"] == "invalid_grant"
    assert all(row.revoked_at is not None for row in family(issued.refresh_token))


def test_outside_the_window_a_retry_revokes_the_family(grace_server):
    issued = issue(grace_server)
    assert issued.rp.refresh(issued.refresh_token).status_code == 200
    old = family(issued.refresh_token)[0]
    old.refresh_used_at = utcnow() - timedelta(seconds=GRACE + 1)
    db.session.commit()

    retry = issued.rp.refresh(issued.refresh_token)

    assert retry.status_code == 400 and retry.json()["error"] == "invalid_grant"
    assert all(row.revoked_at is not None for row in family(issued.refresh_token))


def test_once_the_family_was_revoked_a_retry_is_reuse(grace_server):
    """An app that signs the member out revokes its newest refresh token: the whole family ends.
    A copy of the previous refresh token, presented within the window, must not bring back the
    sealed answer - that would hand a live-looking token pair to whoever kept the copy."""
    issued = issue(grace_server)
    first = issued.rp.refresh(issued.refresh_token)
    assert first.status_code == 200, first.text
    revoked = post_as(
        grace_server,
        REVOKE,
        issued.client_id,
        issued.rp.client_secret,
        {"token": first.json()["refresh_token"], "token_type_hint": "refresh_token"},
    )
    assert revoked.status_code == 200, revoked.text

    retry = issued.rp.refresh(issued.refresh_token)

    assert retry.status_code == 400 and retry.json()["error"] == "invalid_grant"
    assert not {"access_token", "refresh_token", "id_token"} & retry.json().keys()
    rows = family(issued.refresh_token)
    assert len(rows) == 2  # nothing new was minted
    assert all(row.revoked_at is not None for row in rows)


def test_replay_rows_older_than_a_minute_are_deleted_when_a_new_one_is_stored(grace_server):
    """Sealed answers are only useful for the window (at most 60 s): older ones are purged at the
    next rotation, so the table does not grow with every refresh ever made. A row younger than a
    minute is still needed and is kept."""
    aged = issue(grace_server)
    assert aged.rp.refresh(aged.refresh_token).status_code == 200
    young = issue(grace_server)
    young_first = young.rp.refresh(young.refresh_token)
    assert young_first.status_code == 200, young_first.text
    aged_id = family(aged.refresh_token)[0].id
    young_id = family(young.refresh_token)[0].id
    row = db.session.get(RefreshReplay, aged_id)
    assert row is not None
    row.created_at = utcnow() - timedelta(seconds=61)
    db.session.commit()

    assert young.rp.refresh(young_first.json()["refresh_token"]).status_code == 200

    newest_id = family(young.refresh_token)[1].id  # the token the second rotation rotated out
    assert db.session.get(RefreshReplay, aged_id) is None
    assert db.session.get(RefreshReplay, young_id) is not None
    assert db.session.get(RefreshReplay, newest_id) is not None


def test_another_client_cannot_replay(grace_server):
    from tests.factories import make_client
    from tests.flows import RelyingParty

    issued = issue(grace_server)
    assert issued.rp.refresh(issued.refresh_token).status_code == 200
    other, secret = make_client(name="Thief")
    thief = RelyingParty(grace_server, other.client_id, secret)
    response = thief.refresh(issued.refresh_token)
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert "access_token" not in response.text


@pytest.mark.parametrize("value", [-1, 61, 3600])
def test_window_is_bounded(value):
    with pytest.raises(ConfigError, match="REFRESH_GRACE_SECONDS"):
        check_settings(load_settings({"APP_ENV": "development", "REFRESH_GRACE_SECONDS": value}))


def test_window_bounds_accept_zero_and_sixty():
    for value in (0, 60):
        check_settings(load_settings({"APP_ENV": "development", "REFRESH_GRACE_SECONDS": value}))
