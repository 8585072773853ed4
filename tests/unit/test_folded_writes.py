"""The sign-in's writes that belong together (issue 20): a login with its audit line and the
pending request it was for; a consent answer's single-use mark with the consent it records, its
audit line and its code. On PostgreSQL each is one statement, on SQLite several; on both they land
together, and nothing of a consent answer is written for a request that was answered already or
expired."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.core.extensions import db
from app.models import AuditEvent, AuthorizationCode, Consent, Interaction, LoginSession
from app.models.base import new_secret, sha256_hex, utcnow
from app.services.audit import event_row
from app.services.consent import answer_request, consented_scope
from app.store import store
from tests.factories import make_client, make_member
from tests.unit.test_sessions_store import as_member


@pytest.fixture
def member_app_request(app):
    """A member, an app, and a pending request of theirs (its id)."""
    user = make_member(name="Answering")
    client, _ = make_client()
    uid = new_secret(24)
    store().requests.park(
        uid,
        {
            "client_id": client.id,
            "user_id": None,
            "params": {"scope": "openid profile"},
            "browser_hash": sha256_hex("browser"),
            "expires_at": utcnow() + timedelta(minutes=10),
        },
        store().apps.by_id(client.id),
    )
    db.session.commit()
    return as_member(user), store().apps.by_id(client.id), uid


def events(action: str, actor_id: str) -> list[AuditEvent]:
    return list(
        db.session.scalars(select(AuditEvent).where(AuditEvent.action == action, AuditEvent.actor_id == actor_id))
    )


def code_row(member, client) -> dict:
    now = utcnow()
    return {
        "code_hash": sha256_hex(new_secret(32)),
        "client_id": client.id,
        "user_id": member.id,
        "grant_id": new_secret(8),
        "redirect_uri": "https://app.example/cb",
        "scope": "openid profile",
        "nonce": None,
        "code_challenge": "c" * 43,
        "code_challenge_method": "S256",
        "auth_time": now,
        "amr": "pwd",
        "resource": None,
        "issued_at": now,
        "expires_at": now + timedelta(minutes=1),
    }


def codes_of(member) -> list[AuthorizationCode]:
    return list(db.session.scalars(select(AuthorizationCode).where(AuthorizationCode.user_id == member.id)))


def login_values() -> dict:
    now = utcnow()
    return {
        "auth_time": now,
        "expires_at": now + timedelta(hours=1),
        "amr": "pwd",
        "ip": "192.0.2.1",
        "user_agent": "t",
    }


def test_a_login_lands_with_its_audit_line_and_the_request_it_was_for(member_app_request):
    member, client, uid = member_app_request
    event = event_row("signin.ok", actor=member, client=client)
    login = store().logins.start(new_secret(32), member, login_values(), event, attach_to=uid)
    db.session.commit()

    stored = db.session.get(LoginSession, login.id)
    assert stored is not None and stored.user_id == member.id and stored.ip == "192.0.2.1" and stored.ended_at is None
    request = db.session.get(Interaction, uid)
    assert (request.login_session_id, request.user_id) == (login.id, member.id)
    [line] = events("signin.ok", member.id)
    assert line.client_id == client.id and line.actor_email == member.email


def test_a_login_for_no_request_attaches_none(member_app_request):
    member, _client, uid = member_app_request
    login = store().logins.start(new_secret(32), member, login_values(), event_row("signin.ok", actor=member))
    db.session.commit()
    assert db.session.get(LoginSession, login.id) is not None and len(events("signin.ok", member.id)) == 1
    request = db.session.get(Interaction, uid)
    assert (request.login_session_id, request.user_id) == (None, None)


def test_a_consent_answer_lands_whole_and_once(member_app_request):
    member, client, uid = member_app_request
    event = event_row("consent.granted", actor=member, client=client, scopes=["openid", "profile"])
    code = code_row(member, client)
    assert answer_request(uid, member, client, "openid profile", event, code) is True
    db.session.commit()
    [stored] = codes_of(member)
    assert (stored.code_hash, stored.scope, stored.used_at) == (code["code_hash"], "openid profile", None)
    assert db.session.get(Interaction, uid).consumed_at is not None
    consent = db.session.scalars(select(Consent).where(Consent.user_id == member.id)).one()
    assert (consent.client_id, consent.scope) == (client.id, "openid profile")
    [line] = events("consent.granted", member.id)
    assert line.detail == {"scopes": ["openid", "profile"]} and line.client_id == client.id

    # The same request answered again (the form sent twice): refused, and nothing more written.
    again = event_row("consent.granted", actor=member, client=client, scopes=["openid"])
    assert answer_request(uid, member, client, "openid", again, code_row(member, client)) is False
    db.session.commit()
    assert len(codes_of(member)) == 1
    assert db.session.scalars(select(Consent.scope).where(Consent.user_id == member.id)).one() == "openid profile"
    assert len(events("consent.granted", member.id)) == 1


def test_an_expired_request_takes_no_answer(member_app_request):
    member, client, uid = member_app_request
    db.session.get(Interaction, uid).expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    event = event_row("consent.granted", actor=member, client=client, scopes=["openid"])
    assert answer_request(uid, member, client, "openid", event, code_row(member, client)) is False
    db.session.commit()
    assert db.session.get(Interaction, uid).consumed_at is None and codes_of(member) == []
    assert db.session.scalar(select(func.count()).select_from(Consent).where(Consent.user_id == member.id)) == 0
    assert events("consent.granted", member.id) == []


def test_a_new_answer_replaces_what_it_asked_about_and_keeps_the_rest():
    assert consented_scope(("openid", "email"), ["openid", "profile"], ["openid", "profile"]) == "openid profile email"
    assert consented_scope(("openid", "profile"), ["openid", "profile"], ["openid"]) == "openid"
    assert consented_scope((), ["openid"], ["openid"]) == "openid"
