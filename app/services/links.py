"""One-time links (password reset, email verification, invitation): issue, look up, consume.

The token is `secrets.token_urlsafe(32)` (256 random bits) and only its SHA-256 is stored, so a
copy of the database holds no usable link. Issuing a link deletes the member's older unused links
of the same purpose (a newer link invalidates the older ones); consuming is a conditional UPDATE
(`used_at IS NULL` and not expired), so exactly one of two simultaneous uses wins. What ends a
holder's grip on the account voids links too (`void`, `void_email_changes`). Services here
only flush; the caller commits (and sends the mail after the commit).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from flask import current_app
from sqlalchemy import CursorResult, delete, select, update

from app.core.extensions import db
from app.models import LinkPurpose, OneTimeLink, User
from app.models.base import new_secret, sha256_hex, utcnow


class LinkAlreadyUsed(Exception):
    """The link was used (or replaced, or expired) between showing its page and submitting it."""


LIFETIME_SETTING = {
    LinkPurpose.RESET: "PASSWORD_RESET_LIFETIME",
    LinkPurpose.VERIFY: "EMAIL_VERIFICATION_LIFETIME",
    LinkPurpose.INVITE: "INVITATION_LIFETIME",
}
MAX_TOKEN_LENGTH = 100  # token_urlsafe(32) is 43 characters; anything much longer is not ours


def lifetime(purpose: LinkPurpose) -> int:
    """Seconds a link of `purpose` works."""
    return int(current_app.config[LIFETIME_SETTING[purpose]])


def issue(user: User, purpose: LinkPurpose, email: str | None = None) -> str:
    """A new link token for `user` (returned once, to be mailed); older unused links of the same
    purpose stop working. `email` is the address the link is sent to (default: the member's)."""
    now = utcnow()
    db.session.execute(
        delete(OneTimeLink)
        .where(OneTimeLink.user_id == user.id, OneTimeLink.purpose == purpose, OneTimeLink.used_at.is_(None))
        .execution_options(synchronize_session=False)
    )
    token = new_secret(32)
    db.session.add(
        OneTimeLink(
            user_id=user.id,
            purpose=purpose,
            token_hash=sha256_hex(token),
            email=email or user.email,
            created_at=now,
            expires_at=now + timedelta(seconds=lifetime(purpose)),
        )
    )
    db.session.flush()
    return token


def void(user: User, purpose: LinkPurpose) -> int:
    """Every unused link of `purpose` the member has stops working; how many there were."""
    result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]  # DML has a rowcount
        delete(OneTimeLink)
        .where(OneTimeLink.user_id == user.id, OneTimeLink.purpose == purpose, OneTimeLink.used_at.is_(None))
        .execution_options(synchronize_session=False)
    )
    return result.rowcount


def void_email_changes(user: User) -> list[str]:
    """Every unused link that would change the member's address stops working (a verification
    link for the address they have stays); the addresses those links would have set."""
    table = OneTimeLink.__table__
    voided = db.session.execute(
        table.delete()
        .where(
            table.c.user_id == user.id,
            table.c.purpose == LinkPurpose.VERIFY,
            table.c.used_at.is_(None),
            table.c.email != user.email,
        )
        .returning(table.c.email)
    )
    return list(voided.scalars())


def find(token: str | None, purpose: LinkPurpose) -> OneTimeLink | None:
    """The live (unused, unexpired) link of `purpose` for `token`, or None."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    link = db.session.scalar(
        select(OneTimeLink).where(OneTimeLink.token_hash == sha256_hex(token), OneTimeLink.purpose == purpose)
    )
    if link is None or link.used_at is not None or link.expires_at <= utcnow():
        return None
    return link


def consume(link: OneTimeLink) -> bool:
    """Use the link up: True for exactly one caller, and only while it is unexpired."""
    now = utcnow()
    result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]  # DML has a rowcount
        update(OneTimeLink)
        .where(OneTimeLink.id == link.id, OneTimeLink.used_at.is_(None), OneTimeLink.expires_at > now)
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount == 1:
        link.used_at = now
        return True
    return False


# The page each purpose's link opens (the token goes in the query string: the access log records
# paths only, never query strings).
PAGES = {LinkPurpose.RESET: "/password/reset", LinkPurpose.VERIFY: "/email/verify", LinkPurpose.INVITE: "/invitation"}


def link_url(purpose: LinkPurpose, token: str) -> str:
    """The absolute address of a link, on the issuer (never on the Host a request named); works
    outside a request too (the CLI's invitations)."""
    return f"{current_app.config['ISSUER_URL']}{PAGES[purpose]}?{urlencode({'token': token})}"
