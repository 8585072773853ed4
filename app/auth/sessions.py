"""Who is signed in to the provider, from the signed cookie's random id and its LoginSession row."""

from __future__ import annotations

from datetime import timedelta

from flask import current_app, g, request, session
from sqlalchemy import bindparam, select

from app import logs
from app.extensions import db
from app.models import LoginSession, User
from app.models.base import new_secret, sha256_hex, utcnow

SESSION_ID = "sid"
BROWSER_ID = "bid"
# Built once and reused on every request that asks who is signed in (SQLAlchemy then computes the
# statement's cache key once instead of per request).
_LOGIN_BY_HASH = select(LoginSession).where(LoginSession.session_hash == bindparam("hash"))


def current_login() -> LoginSession | None:
    """The live login session of this browser, or None (looked up once per request)."""
    if "login_session" not in g:
        g.login_session = None
        sid = session.get(SESSION_ID)
        if isinstance(sid, str) and sid:
            row = db.session.scalar(_LOGIN_BY_HASH, {"hash": sha256_hex(sid)})
            if row is not None and row.is_live() and not row.user.is_suspended:
                g.login_session = row
                logs.note(user_id=row.user_id)
    return g.login_session


def current_user() -> User | None:
    login = current_login()
    return login.user if login else None


def browser_id() -> str:
    """A random id for this browser, kept across logins; binds pending requests to it."""
    bid = session.get(BROWSER_ID)
    if not isinstance(bid, str) or not bid:
        bid = session[BROWSER_ID] = new_secret(16)
    return bid


def start_login(user: User, amr: tuple[str, ...] = ("pwd",)) -> LoginSession:
    """A fresh session id at every login (no fixation); the CSRF token is renewed with it. The
    browser's previous session, if any (`prompt=login`, another member on the same browser),
    ends on the server: its old cookie must not stay valid for the rest of its lifetime. `amr`:
    how the member proved who they are (RFC 8176), carried to the ID token."""
    previous = current_login()
    if previous is not None:
        previous.ended_at = utcnow()
    bid = browser_id()
    session.clear()
    session[BROWSER_ID] = bid
    sid = new_secret(32)
    now = utcnow()
    row = LoginSession(
        session_hash=sha256_hex(sid),
        user_id=user.id,
        auth_time=now,
        expires_at=now + timedelta(seconds=int(current_app.config["SESSION_LIFETIME"])),
        ip=(request.remote_addr or "")[:64],
        user_agent=(request.user_agent.string or "")[:300],
        last_seen_at=now,
        amr=" ".join(amr),
    )
    db.session.add(row)
    db.session.flush()
    session[SESSION_ID] = sid
    session.permanent = True
    g.login_session = row
    return row


def end_login() -> None:
    """End this browser's session on the server and forget the cookie's id."""
    login = current_login()
    if login is not None:
        login.ended_at = utcnow()
    bid = session.get(BROWSER_ID)
    session.clear()
    if bid:
        session[BROWSER_ID] = bid
    g.login_session = None


def end_all_logins(user: User) -> int:
    """Sign out everywhere: end every live session of the member."""
    now = utcnow()
    rows = db.session.scalars(
        db.select(LoginSession).where(LoginSession.user_id == user.id, LoginSession.ended_at.is_(None))
    ).all()
    for row in rows:
        row.ended_at = now
    return len(rows)


def touch(login: LoginSession) -> None:
    """Note that the session is in use (an app sign-in, the account page), at most once a minute;
    rides along with the caller's commit."""
    now = utcnow()
    if login.last_seen_at is None or now - login.last_seen_at > timedelta(minutes=1):
        login.last_seen_at = now
