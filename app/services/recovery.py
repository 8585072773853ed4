"""Forgot password: a single-use link by mail, then a new password.

The answer to "send me a link" is the same whether or not a member has the address, and so is its
timing: the page hands `request_reset` and the mail to a thread started once the answer is sent
(app/web/background.py). A new password
ends every session of the member (and, if they tick it, disconnects every app), and voids a pending
change of address, as the account page's password change does. A reset link is bound to the
address it was sent to: a change of address, or of password, voids it. Following the link also
proves the member reads that mailbox: the address becomes verified. Services only flush; the views commit.
"""

from __future__ import annotations

from flask import current_app

from app.models import LinkPurpose, OneTimeLink, User
from app.services import links, throttle
from app.services.audit import record
from app.services.mail import Mail
from app.services.members import Ended, change_password, check_password_rules, member_by_email


def mail_budget_left(user: User) -> bool:
    """MAIL_ACCOUNT_LIMIT: nobody can flood a member's inbox by asking again and again."""
    spent = throttle.spend(throttle.parsed_limit(current_app.config["MAIL_ACCOUNT_LIMIT"]), "mail-account", user.id)
    return spent is None or spent.allowed


def request_reset(email: str) -> Mail | None:
    """A reset link for the member with `email`, as a mail to send after the commit; None when no
    member has that address (or it is suspended, or its mail budget is spent). The caller answers the same either way."""
    user = member_by_email(email)
    if user is None or user.is_suspended or not mail_budget_left(user):
        return None
    token = links.issue(user, LinkPurpose.RESET)
    record("password.reset_requested", subject=user)
    minutes = links.lifetime(LinkPurpose.RESET) // 60
    return Mail.from_template(
        user.email,
        "Reset your Credits ID password",
        "reset",
        user=user,
        url=links.link_url(LinkPurpose.RESET, token),
        minutes=minutes,
    )


def reset_link(token: str | None) -> OneTimeLink | None:
    """The live reset link for `token`, while the member's address is still the one it was sent
    to: a link mailed to an address the account has left speaks for it no more."""
    link = links.find(token, LinkPurpose.RESET)
    if link is None or link.email != link.user.email:
        return None
    return link


def complete_reset(link: OneTimeLink, password: str, disconnect_apps: bool) -> Ended:
    """Set the new password through the link (used up here). Raises MemberError for a password
    the rules refuse (the link stays usable), LinkAlreadyUsed when another request used it first."""
    user = link.user
    check_password_rules(password, user.email, user.name)
    if not links.consume(link):
        raise links.LinkAlreadyUsed()
    ended = change_password(
        user, password, actor=user, disconnect_apps=disconnect_apps, action="password.reset_completed"
    )
    if link.email == user.email and not user.email_verified:
        user.email_verified = True
        record("email.verified", actor=user, subject=user, via="password reset")
    return ended
