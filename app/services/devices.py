"""Device cookies: browsers a member has signed in from before (OWASP, "Slow Down Online Guessing
Attacks with Device Cookies").

After a successful sign-in the browser gets a long-lived cookie, signed with SECRET_KEY, that
names the account and a random device id. A correct password presented with that cookie is never
refused by the per-account delay nor by the per-IP limit (app/services/throttle.py): anyone who knows a
member's email can slow down guessing from *unknown* browsers, but not lock the member out of
their own. The cookie holds no secret of the account (ids only) and cannot be forged without
SECRET_KEY; a stolen one gets its own small failure budget, after which it counts as unknown.

One cookie holds the entries of the last few accounts used in this browser (one entry per
account, as OWASP describes), so signing in as someone else does not forget the first member.
"""

from __future__ import annotations

from flask import Response, after_this_request, current_app, g, request
from itsdangerous import BadSignature, URLSafeTimedSerializer

from app.models.base import new_secret
from app.store.members import MemberFacts

COOKIE = "credits_id_device"
SALT = "credits-id device cookie"
MAX_ACCOUNTS = 5  # entries kept per browser; the least recently used account drops out


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt=SALT)


def _entries() -> list[tuple[str, str]]:
    """(user id, device id) pairs of this browser's valid cookie, most recent first (once per request)."""
    if "device_entries" not in g:
        g.device_entries = []
        raw = request.cookies.get(COOKIE)
        if raw and len(raw) < 4096:
            try:
                data = _serializer().loads(raw, max_age=int(current_app.config["DEVICE_COOKIE_LIFETIME"]))
            except BadSignature:  # includes expired signatures
                data = None
            if isinstance(data, list):
                g.device_entries = [
                    (e[0], e[1])
                    for e in data[:MAX_ACCOUNTS]
                    if isinstance(e, list) and len(e) == 2 and all(isinstance(v, str) for v in e)
                ]
    return g.device_entries


def known_device(user: MemberFacts | None) -> str | None:
    """The device id this browser holds for `user` (it signed in to that account before), or None."""
    if user is None:
        return None
    return next((device for user_id, device in _entries() if user_id == user.id), None)


def remember_device(user: MemberFacts) -> None:
    """Mark this browser as known for `user` (after a successful sign-in or password reset): the
    cookie is set (or renewed, with a fresh lifetime) on this request's response."""
    device = known_device(user) or new_secret(16)
    entries = [(user.id, device)] + [e for e in _entries() if e[0] != user.id]
    g.device_entries = entries[:MAX_ACCOUNTS]
    value = _serializer().dumps([list(e) for e in g.device_entries])

    @after_this_request
    def set_cookie(response: Response) -> Response:
        https = current_app.config["ISSUER_URL"].startswith("https://")
        response.set_cookie(
            COOKIE,
            value,
            max_age=int(current_app.config["DEVICE_COOKIE_LIFETIME"]),
            httponly=True,
            secure=https,
            samesite="Lax",
            path="/",
        )
        return response
