"""`flask purge-expired`: deletes what can no longer be used, in batches, and nothing else."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import func, select

from app.core.extensions import db
from app.models import (
    AuditEvent,
    AuthorizationCode,
    Interaction,
    KeyRequest,
    LoginSession,
    OneTimeLink,
    Token,
    WebauthnChallenge,
)
from app.models.base import new_secret, new_uuid, sha256_hex, utcnow
from app.services.apikeys import create_key
from app.services.housekeeping import purge_expired, purge_table
from app.store import store
from tests.factories import make_client, make_member
from tests.flows import RelyingParty, sign_in

PAST = timedelta(hours=-1)
FUTURE = timedelta(hours=1)


def add_code(client, member, expires: timedelta, used: bool = False) -> AuthorizationCode:
    now = utcnow()
    row = AuthorizationCode(
        code_hash=sha256_hex(new_secret()),
        client_id=client.id,
        user_id=member.id,
        grant_id=new_uuid(),
        scope="openid",
        auth_time=now,
        issued_at=now,
        expires_at=now + expires,
        used_at=now if used else None,
    )
    db.session.add(row)
    return row


def add_token(client, member, access: timedelta, refresh: timedelta | None, **kw) -> Token:
    now = utcnow()
    row = Token(
        client_id=client.id,
        user_id=member.id,
        grant_id=kw.pop("grant_id", new_uuid()),
        scope="openid",
        access_token_hash=sha256_hex(new_secret()),
        issued_at=now,
        auth_time=now,
        access_expires_at=now + access,
        refresh_token_hash=sha256_hex(new_secret()) if refresh is not None else None,
        refresh_expires_at=now + refresh if refresh is not None else None,
        **kw,
    )
    db.session.add(row)
    return row


def add_session(member, expires: timedelta, ended: bool = False) -> LoginSession:
    now = utcnow()
    row = LoginSession(
        session_hash=sha256_hex(new_secret()),
        user_id=member.id,
        auth_time=now,
        expires_at=now + expires,
        ended_at=now if ended else None,
    )
    db.session.add(row)
    return row


def add_interaction(client, expires: timedelta) -> Interaction:
    row = Interaction(
        id=new_secret(24), client_id=client.id, params={}, browser_hash="0" * 64, expires_at=utcnow() + expires
    )
    db.session.add(row)
    return row


def add_link(member, expires: timedelta, used: bool = False) -> OneTimeLink:
    now = utcnow()
    row = OneTimeLink(
        user_id=member.id,
        purpose="reset",
        token_hash=sha256_hex(new_secret()),
        email=member.email,
        expires_at=now + expires,
        used_at=now if used else None,
    )
    db.session.add(row)
    return row


def add_challenge(member, expires: timedelta) -> WebauthnChallenge:
    row = WebauthnChallenge(
        handle_hash=sha256_hex(new_secret()),
        challenge_hash=sha256_hex(new_secret()),
        purpose="2fa",
        user_id=member.id,
        expires_at=utcnow() + expires,
    )
    db.session.add(row)
    return row


def add_event(age: timedelta) -> AuditEvent:
    row = AuditEvent(action="signin.failed", ip="203.0.113.7", created_at=utcnow() - age)
    db.session.add(row)
    return row


def add_key_request(key, age: timedelta) -> KeyRequest:
    row = KeyRequest(
        key_id=key.id,
        at=utcnow() - age,
        surface="api",
        method="GET",
        path="/v1/roles",
        status=200,
        request_id=new_uuid(),
    )
    db.session.add(row)
    return row


def seed():
    member = make_member()
    client, _ = make_client()
    key, _ = create_key(make_member(role="developer"), "Purged", "secret", "payg")
    keep = {
        "event": add_event(timedelta(days=364)),  # within AUDIT_RETENTION_DAYS (365)
        "code": add_code(client, member, FUTURE, used=True),  # used but unexpired: replay detection needs it
        "access": add_token(client, member, FUTURE, None),
        "rotated": add_token(client, member, PAST, FUTURE, refresh_used_at=utcnow()),  # refresh still live
        "revoked": add_token(client, member, PAST, FUTURE, revoked_at=utcnow()),
        "session": add_session(member, FUTURE),
        "interaction": add_interaction(client, FUTURE),
        "link": add_link(member, FUTURE),
        "challenge": add_challenge(member, FUTURE),
        "key_request": add_key_request(key, timedelta(days=29)),  # within KEY_ACTIVITY_DAYS (30)
    }
    for _ in range(5):
        add_code(client, member, PAST)
        add_code(client, member, PAST, used=True)
        add_token(client, member, PAST, None)
        add_token(client, member, PAST, PAST)
        add_session(member, PAST)
        add_session(member, FUTURE, ended=True)
        add_interaction(client, PAST)
    for used in (False, True, False):
        add_link(member, PAST, used=used)
    for _ in range(2):
        add_challenge(member, PAST)
    for _ in range(4):
        add_event(timedelta(days=366))
    for _ in range(6):
        add_key_request(key, timedelta(days=31))
    db.session.commit()
    return {name: row.id for name, row in keep.items()}


def remaining(model) -> set:
    db.session.expire_all()
    pk = model.__mapper__.primary_key[0]
    return set(db.session.scalars(select(pk)))


def test_purge_deletes_only_what_is_unusable_in_batches():
    keep = seed()
    deleted = purge_expired(batch_size=3, end_batch=db.session.commit)
    assert deleted == {
        "authorization_codes": 10,
        "tokens": 10,
        "login_sessions": 10,
        "interactions": 5,
        "one_time_links": 3,
        "webauthn_challenges": 2,
        "audit_events": 4,
        "api_key_requests": 6,
    }
    assert remaining(AuthorizationCode) == {keep["code"]}
    assert remaining(KeyRequest) == {keep["key_request"]}
    assert remaining(Token) == {keep["access"], keep["rotated"], keep["revoked"]}
    assert remaining(LoginSession) == {keep["session"]}
    assert remaining(Interaction) == {keep["interaction"]}
    assert remaining(OneTimeLink) == {keep["link"]}
    assert remaining(WebauthnChallenge) == {keep["challenge"]}
    assert keep["event"] in remaining(AuditEvent)
    assert not any(e.created_at < utcnow() - timedelta(days=365) for e in AuditEvent.query)
    assert purge_expired(batch_size=3, end_batch=db.session.commit) == dict.fromkeys(deleted, 0)


def test_a_purge_walks_each_table_once_along_its_key():
    """Each batch starts past the last key the previous one deleted (the store's keyset walk), so
    live rows between expired ones are read once and kept, and every batch is its own commit."""
    member = make_member()
    client, _ = make_client()
    pattern = [PAST, PAST, FUTURE, PAST, FUTURE, FUTURE, PAST, PAST, PAST]
    rows = [add_token(client, member, access, None) for access in pattern]
    db.session.commit()
    expired = [row.id for row, access in zip(rows, pattern, strict=True) if access is PAST]
    live = {row.id for row, access in zip(rows, pattern, strict=True) if access is FUTURE}
    now = utcnow()
    assert store().expiry.delete_batch("tokens", now, None, 2) == (2, expired[1])
    assert store().expiry.delete_batch("tokens", now, expired[1], 2) == (2, expired[3])
    db.session.rollback()  # nothing committed yet: both batches undone

    commits = []
    assert purge_table("tokens", now, 2, lambda: commits.append(db.session.commit())) == len(expired)
    assert len(commits) == 4  # 2 + 2 + 2 deleted, then a last batch that found nothing past the key
    assert remaining(Token) == live
    assert store().expiry.delete_batch("tokens", now, None, 2) == (0, None)


def test_audit_retention_of_zero_keeps_the_trail_forever(app, monkeypatch):
    seed()
    monkeypatch.setitem(app.config, "AUDIT_RETENTION_DAYS", 0)
    assert purge_expired(batch_size=3, end_batch=db.session.commit)["audit_events"] == 0
    assert AuditEvent.query.filter(AuditEvent.created_at < utcnow() - timedelta(days=365)).count() == 4


def test_cli_purge_with_json_and_dry_run(app):
    keep = seed()
    runner = app.test_cli_runner()
    dry = runner.invoke(args=["purge-expired", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output) == {
        "dry_run": True,
        "expired": {
            "authorization_codes": 10,
            "tokens": 10,
            "login_sessions": 10,
            "interactions": 5,
            "one_time_links": 3,
            "webauthn_challenges": 2,
            "audit_events": 4,
            "api_key_requests": 6,
        },
    }
    db.session.expire_all()
    assert db.session.scalar(select(func.count()).select_from(AuthorizationCode)) == 11  # nothing deleted

    result = runner.invoke(args=["purge-expired", "--batch-size", "4", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "dry_run": False,
        "batch_size": 4,
        "meter_rows_folded": 0,
        "deleted": {
            "authorization_codes": 10,
            "tokens": 10,
            "login_sessions": 10,
            "interactions": 5,
            "one_time_links": 3,
            "webauthn_challenges": 2,
            "audit_events": 4,
            "api_key_requests": 6,
        },
    }
    assert remaining(AuthorizationCode) == {keep["code"]}

    human = runner.invoke(args=["purge-expired"])
    assert human.exit_code == 0 and "deleted 0 tokens" in human.output

    bad = runner.invoke(args=["purge-expired", "--batch-size", "0"])
    assert bad.exit_code == 2 and "batch-size" in bad.output


def test_purge_while_serving_keeps_live_sign_ins_working(live_server):
    """Purging during traffic removes the expired rows and leaves a live grant usable."""
    seed()
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    assert purge_expired(batch_size=2, end_batch=db.session.commit)["tokens"] == 10
    response = rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    assert purge_expired(batch_size=2, end_batch=db.session.commit) == {
        "authorization_codes": 0,
        "tokens": 0,
        "login_sessions": 0,
        "interactions": 0,
        "one_time_links": 0,
        "webauthn_challenges": 0,
        "audit_events": 0,
        "api_key_requests": 0,
    }
    assert rp.refresh(response.json()["refresh_token"]).status_code == 200
