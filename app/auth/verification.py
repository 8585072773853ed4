"""Verified email addresses: `email_verified` (the ID token's claim) is true only after the member
followed a link mailed to that address.

- Verification: the member asks (account page) for a link to their current address.
- Change of address: the new address gets the link and replaces the old one only when the link is
  followed (the old address is told); until then sign-in and apps keep the old one.
- Invitation: a member created by an admin (CLI) gets a link to set a first password, which
  verifies the address too.
Services only flush; the caller commits, then sends the returned mails.
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from app.audit import record
from app.auth import links
from app.auth.passwords import passwords
from app.auth.recovery import mail_budget_left
from app.extensions import db
from app.mail import Mail
from app.members import MemberError, check_password_rules, member_email
from app.models import LinkPurpose, OneTimeLink, User


def _days(purpose: LinkPurpose) -> str:
    seconds = links.lifetime(purpose)
    return f"{seconds // 86400} days" if seconds >= 2 * 86400 else f"{seconds // 3600} hours"


def send_verification(user: User) -> Mail | None:
    """A link that verifies the member's current address; None when already verified or the
    member's mail budget is spent."""
    if user.email_verified or not mail_budget_left(user):
        return None
    token = links.issue(user, LinkPurpose.VERIFY)
    record("email.verification_sent", actor=user, subject=user)
    return Mail.from_template(
        user.email,
        "Verify your email address for Credits ID",
        "verify",
        user=user,
        url=links.link_url(LinkPurpose.VERIFY, token),
        lifetime=_days(LinkPurpose.VERIFY),
        new_address=False,
    )


def request_email_change(user: User, new_email: str) -> Mail:
    """A link to the new address; the address changes when it is followed. Raises MemberError for
    an address that is not valid, is the current one, or belongs to another member."""
    new_email = member_email(new_email)
    if new_email == user.email:
        raise MemberError("That is already your address.")
    if db.session.scalar(db.select(User.id).where(User.email == new_email)):
        raise MemberError("Another account uses that address.")
    if not mail_budget_left(user):  # nobody sends mail to strangers' inboxes in a loop through us
        raise MemberError("Too many links were sent for your account. Try again in an hour.")
    token = links.issue(user, LinkPurpose.VERIFY, email=new_email)
    record("email.change_requested", actor=user, subject=user, new_email=new_email)
    return Mail.from_template(
        new_email,
        "Confirm your new email address for Credits ID",
        "verify",
        user=user,
        url=links.link_url(LinkPurpose.VERIFY, token),
        lifetime=_days(LinkPurpose.VERIFY),
        new_address=True,
        email=new_email,
    )


def confirm(link: OneTimeLink) -> list[Mail]:
    """Follow a verification link: the address is verified (and, for a change, becomes the
    member's). Returns the mails to send after the commit (a notice to the old address). Raises
    LinkAlreadyUsed, or MemberError when another member took the new address meanwhile."""
    user = link.user
    if link.email != user.email and db.session.scalar(db.select(User.id).where(User.email == link.email)):
        raise MemberError("Another account uses that address now.")
    if not links.consume(link):
        raise links.LinkAlreadyUsed()
    if link.email == user.email:
        user.email_verified = True
        record("email.verified", actor=user, subject=user)
        return []
    old = user.email
    user.email, user.email_verified = link.email, True
    try:
        db.session.flush()
    except IntegrityError:
        raise MemberError("Another account uses that address now.") from None
    record("email.changed", actor=user, subject=user, previous=old, email=user.email)
    return [Mail.from_template(old, "Your Credits ID email address was changed", "email_changed", user=user, old=old)]


def invite(user: User) -> Mail:
    """An invitation to set a first password (a member an admin created); following it verifies
    the address. A newer invitation replaces the older."""
    token = links.issue(user, LinkPurpose.INVITE)
    record("member.invited", subject=user)
    return Mail.from_template(
        user.email,
        "You are invited to Credits ID",
        "invite",
        user=user,
        url=links.link_url(LinkPurpose.INVITE, token),
        lifetime=_days(LinkPurpose.INVITE),
    )


def accept_invitation(link: OneTimeLink, password: str) -> None:
    """Set the first password through the invitation link (used up here); verifies the address.
    Raises MemberError for a password the rules refuse, LinkAlreadyUsed when used already."""
    check_password_rules(password)
    if not links.consume(link):
        raise links.LinkAlreadyUsed()
    user = link.user
    user.password_hash = passwords.hash(password)
    if link.email == user.email:
        user.email_verified = True
    record("member.invitation_accepted", actor=user, subject=user)
