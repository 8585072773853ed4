"""Verified email addresses: `email_verified` (the ID token's claim) is true only after the member
followed a link mailed to that address.

- Verification: the member asks (account page) for a link to their current address.
- Change of address: the new address gets the link and replaces the old one only when the link is
  followed; until then sign-in and apps keep the old one. The old address is told when the change
  is asked for (with what to do if it was not the member) and when it is done. A pending change
  shows on the account page, which can cancel it; a password change or reset, and signing out
  everywhere, cancel it too (app.services.members.change_password, the account page): whoever asked for it
  may be the one the member is locking out. A completed change voids the reset links sent to the
  old address.
- Invitation: a member created by an admin (CLI) gets a link to set a first password, which
  verifies the address too.
Services only flush; the caller commits, then sends the returned mails.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app.core.extensions import db
from app.models import LinkPurpose, OneTimeLink, User
from app.models.base import utcnow
from app.services import links
from app.services.audit import record
from app.services.mail import Mail
from app.services.members import MemberError, check_password_rules, member_email
from app.services.notices import security_notice
from app.services.passwords import passwords
from app.services.recovery import mail_budget_left


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


def request_email_change(user: User, new_email: str) -> list[Mail]:
    """A link to the new address (the address changes when it is followed), and a notice to the
    current one: the mails to send after the commit, the link's first. Raises MemberError for an
    address that is not valid, is the current one, or belongs to another member."""
    new_email = member_email(new_email)
    if new_email == user.email:
        raise MemberError("That is already your address.")
    if db.session.scalar(db.select(User.id).where(User.email == new_email)):
        raise MemberError("Another account uses that address.")
    if not mail_budget_left(user):  # nobody sends mail to strangers' inboxes in a loop through us
        raise MemberError("Too many links were sent for your account. Try again in an hour.")
    token = links.issue(user, LinkPurpose.VERIFY, email=new_email)
    record("email.change_requested", actor=user, subject=user, new_email=new_email)
    lifetime = _days(LinkPurpose.VERIFY)
    return [
        Mail.from_template(
            new_email,
            "Confirm your new email address for Credits ID",
            "verify",
            user=user,
            url=links.link_url(LinkPurpose.VERIFY, token),
            lifetime=lifetime,
            new_address=True,
            email=new_email,
        ),
        security_notice(
            user,
            f"A change of your email address to {new_email} was asked for",
            detail=(
                f"Nothing changes unless the link we sent to {new_email} is opened (it works for {lifetime}). "
                "Resetting your password, or cancelling the change on your account page, calls it off."
            ),
        ),
    ]


def pending_email_change(user: User) -> OneTimeLink | None:
    """The live link that would change the member's address (its `email`, its `created_at`), if any."""
    return db.session.scalar(
        select(OneTimeLink).where(
            OneTimeLink.user_id == user.id,
            OneTimeLink.purpose == LinkPurpose.VERIFY,
            OneTimeLink.used_at.is_(None),
            OneTimeLink.expires_at > utcnow(),
            OneTimeLink.email != user.email,
        )
    )


def cancel_email_change(user: User, actor: User | None) -> str | None:
    """Call off a pending change of address (its link stops working), audited; the address it
    would have set, or None when none was pending."""
    voided = links.void_email_changes(user)
    if not voided:
        return None
    record("email.change_cancelled", actor=actor, subject=user, new_email=voided[-1])
    return voided[-1]


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
    resets = links.void(user, LinkPurpose.RESET)  # sent to the old address: it no longer speaks for the account
    record("email.changed", actor=user, subject=user, previous=old, email=user.email, reset_links_voided=resets or None)
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
    check_password_rules(password, link.user.email, link.user.name)
    if not links.consume(link):
        raise links.LinkAlreadyUsed()
    user = link.user
    user.password_hash = passwords.hash(password)
    if link.email == user.email:
        user.email_verified = True
    record("member.invitation_accepted", actor=user, subject=user)
