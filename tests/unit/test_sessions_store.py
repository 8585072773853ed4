"""The live-login rule, read two ways: alone (`live_login`, every page that asks who is signed in)
and beside a pending request (`find_with_login`, the consent page's one query). Both must find the
same login in every state a session can be in, or the consent page would answer for a session the
rest of the provider no longer honours."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from app.core.extensions import db
from app.models import LoginSession, User
from app.models.base import new_secret, sha256_hex, utcnow
from app.store import store
from app.store.members import Member
from tests.factories import make_client, make_member


def as_member(user: User) -> Member:
    return Member(user.id, user.sub, user.name, user.email, user.email_verified, user.tier, user.profile_id)


@pytest.fixture
def pending_and_login(app):
    """A pending request, and a live login of a member in the same browser (its cookie's id)."""
    user = make_member(name="Signed In")
    client, _ = make_client()
    uid, sid, now = new_secret(24), new_secret(32), utcnow()
    store().requests.park(
        uid,
        {
            "client_id": client.id,
            "user_id": None,
            "params": {"scope": "openid"},
            "browser_hash": sha256_hex("browser"),
            "expires_at": now + timedelta(minutes=10),
        },
        store().apps.by_id(client.id),
    )
    login = store().logins.start(
        sid,
        as_member(user),
        {"auth_time": now, "expires_at": now + timedelta(hours=1), "amr": "pwd", "ip": "", "user_agent": ""},
    )
    db.session.commit()
    return uid, sid, login, user


def ended(login, user):
    db.session.execute(update(LoginSession).where(LoginSession.id == login.id).values(ended_at=utcnow()))


def expired(login, user):
    past = utcnow() - timedelta(seconds=1)
    db.session.execute(update(LoginSession).where(LoginSession.id == login.id).values(expires_at=past))


def suspended(login, user):
    db.session.execute(update(User).where(User.id == user.id).values(suspended_at=utcnow()))


def test_a_live_login_is_found_beside_the_request(pending_and_login):
    uid, sid, login, user = pending_and_login
    request, found = store().requests.find_with_login(uid, sid)
    assert request is not None and request.id == uid and request.client is not None
    assert found == store().logins.live(sid)
    assert found is not None and found.id == login.id and found.user == as_member(user)
    assert (found.auth_time, found.expires_at, found.amr) == (login.auth_time, login.expires_at, "pwd")


@pytest.mark.parametrize("change", [ended, expired, suspended])
def test_a_login_the_provider_no_longer_honours_is_not_found_beside_the_request(pending_and_login, change):
    uid, sid, login, user = pending_and_login
    change(login, user)
    db.session.commit()
    request, found = store().requests.find_with_login(uid, sid)
    assert request is not None and request.id == uid
    assert found is None and store().logins.live(sid) is None


@pytest.mark.parametrize("cookie", [None, "", "another-browsers-session-id"])
def test_without_the_sessions_cookie_the_request_comes_alone(pending_and_login, cookie):
    uid, _, _, _ = pending_and_login
    request, found = store().requests.find_with_login(uid, cookie)
    assert request is not None and request.id == uid and found is None


def test_an_unknown_request_comes_back_as_nothing(pending_and_login):
    _, sid, _, _ = pending_and_login
    assert store().requests.find_with_login("no-such-request", sid) == (None, None)
