"""Who is signed in to the provider: the signed cookie carries a random id, the protocol store's
login session row carries the rest, so a session can be ended from the server."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import current_app, g, request, session

from app.core import logs
from app.core.adapters import new_csrf_secret
from app.core.extensions import db
from app.models import User
from app.models.base import new_secret, utcnow
from app.store import store
from app.store.logins import Login
from app.store.members import Member, MemberFacts

SESSION_ID = "sid"
BROWSER_ID = "bid"


def current_login() -> Login | None:
    """The live login session of this browser, or None (looked up once per request). A session
    that ended, expired or belongs to a suspended member is not found."""
    if "login_session" not in g:
        sid = login_cookie()
        known_login(store().logins.live(sid) if sid is not None else None)
    return g.login_session


def login_cookie() -> str | None:
    """The session id this browser's cookie carries, if any."""
    sid = session.get(SESSION_ID)
    return sid if isinstance(sid, str) and sid else None


def known_login(login: Login | None) -> None:
    """This request's login, read with something else (`current_login` then asks no more)."""
    g.login_session = login
    if login is not None:
        logs.note(user_id=login.user_id)


def current_user() -> User | None:
    """The signed-in member as the pages edit them (the ORM row; the protocol reads `current_login`)."""
    login = current_login()
    return db.session.get(User, login.user_id) if login else None


def browser_id() -> str:
    """A random id for this browser, kept across logins; binds pending requests to it. A browser
    new to us gets its CSRF secret with it, in the same cookie (`new_csrf_secret`)."""
    bid = session.get(BROWSER_ID)
    if not isinstance(bid, str) or not bid:
        bid = session[BROWSER_ID] = new_secret(16)
        new_csrf_secret(keep_present=True)
    return bid


def start_login(
    user: MemberFacts,
    amr: tuple[str, ...] = ("pwd",),
    event: dict[str, Any] | None = None,
    attach_to: str | None = None,
) -> Login:
    """A fresh session id at every login (no fixation); the CSRF secret is renewed with it. The
    browser's previous session, if any (`prompt=login`, another member on the same browser),
    ends on the server: its old cookie must not stay valid for the rest of its lifetime. `amr`:
    how the member proved who they are (RFC 8176), carried to the ID token. `event`, the sign-in's
    audit line, and `attach_to`, the pending request it was for, are stored with the session
    (the store's `start_login`). In the caller's transaction (the login page commits)."""
    previous = current_login()
    if previous is not None:
        store().logins.end(previous.id)
    _renew_cookie(browser_id())
    sid = new_secret(32)
    now = utcnow()
    member = Member(user.id, user.sub, user.name, user.email, user.email_verified, user.tier, user.profile_id)
    login = store().logins.start(
        sid,
        member,
        {
            "auth_time": now,
            "expires_at": now + timedelta(seconds=int(current_app.config["SESSION_LIFETIME"])),
            "ip": (request.remote_addr or "")[:64],
            "user_agent": (request.user_agent.string or "")[:300],
            "amr": " ".join(amr),
        },
        event,
        attach_to,
    )
    session[SESSION_ID] = sid
    session.permanent = True
    g.login_session = login
    return login


def end_login() -> None:
    """End this browser's session on the server and forget the cookie's id."""
    login = current_login()
    if login is not None:
        store().logins.end(login.id)
    _renew_cookie(session.get(BROWSER_ID))
    g.login_session = None


def _renew_cookie(bid: str | None) -> None:
    """The session emptied at a login or a logout (nothing carries across: no fixation), keeping
    the browser's id, with a new CSRF secret in the same cookie: the old session's tokens stop
    working, and the page after it writes no cookie of its own (`new_csrf_secret`)."""
    session.clear()
    if bid:
        session[BROWSER_ID] = bid
    new_csrf_secret()


def end_all_logins(user: User) -> int:
    """Sign out everywhere: end every live session of the member."""
    return store().logins.end_all_of(user.id)


def touch(login: Login) -> None:
    """Note that the session is in use (an app sign-in, the account page), at most once a minute;
    rides along with the caller's commit."""
    now = utcnow()
    if login.last_seen_at is None or now - login.last_seen_at > timedelta(minutes=1):
        store().logins.note_seen(login.id, now)
