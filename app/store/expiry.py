"""When a protocol row can no longer be used, said by the store that owns the rows, so that
housekeeping (app/services/housekeeping.py) deletes nothing the protocol could still accept."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import ColumnElement, Table, or_

from app.models import AuthorizationCode, Interaction, LoginSession, Token

_codes, _tokens = AuthorizationCode.__table__, Token.__table__
_sessions, _interactions = LoginSession.__table__, Interaction.__table__

# table name -> (the table, the rows of it that are done with at `now`)
PURGEABLE: dict[str, tuple[Table, Callable[[datetime], ColumnElement[bool]]]] = {
    # used or not: a replay of an expired code is refused as expired
    "authorization_codes": (_codes, lambda now: _codes.c.expires_at <= now),
    # a rotated-out refresh token is kept until the pair expires, so its reuse is still recognized
    "tokens": (
        _tokens,
        lambda now: (
            (_tokens.c.access_expires_at <= now)
            & or_(_tokens.c.refresh_expires_at.is_(None), _tokens.c.refresh_expires_at <= now)
        ),
    ),
    "login_sessions": (_sessions, lambda now: or_(_sessions.c.expires_at <= now, _sessions.c.ended_at.is_not(None))),
    "interactions": (_interactions, lambda now: _interactions.c.expires_at <= now),
}
