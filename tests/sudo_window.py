"""Moving a browser's sudo-mode confirmation (app/web/account/sudo.py) into the past without waiting for
the clock: the window lives in the session cookie, signed with the tests' SECRET_KEY, so a test
can open the cookie, age the confirmation and sign it again, as the server would have."""

from __future__ import annotations

from flask import current_app

from app.web.account.sudo import WINDOW

SESSION_COOKIE = "credits_id_session"


def aged(cookie_value: str, seconds: int) -> str:
    """The session cookie `cookie_value` with its sudo confirmation `seconds` older (it must have one)."""
    serializer = current_app.session_interface.get_signing_serializer(current_app)  # type: ignore[attr-defined]
    data = serializer.loads(cookie_value)
    assert WINDOW in data, "no confirmation in this session"
    login_id, confirmed_at = data[WINDOW]
    data[WINDOW] = [login_id, confirmed_at - seconds]
    return serializer.dumps(data)


def has_confirmation(cookie_value: str) -> bool:
    serializer = current_app.session_interface.get_signing_serializer(current_app)  # type: ignore[attr-defined]
    return WINDOW in serializer.loads(cookie_value)
