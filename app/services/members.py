"""Creating and changing members (CLI, console and demo data share these rules).

Services: every function checks before it writes and joins the caller's transaction; none
commits. The console page or the command that calls them commits once, with their audit rows,
and sends any mail about the change only after that commit."""

from __future__ import annotations

import uuid
from typing import TypedDict

from sqlalchemy import bindparam, select, update

from app.core.email_address import InvalidEmail, stored_form
from app.core.extensions import db
from app.models import LinkPurpose, Profile, Role, Tier, User
from app.models.base import new_secret, utcnow
from app.services import links, password_strength
from app.services.audit import record
from app.services.consent import revoke_consent, withdraw_beyond_tier
from app.services.passwords import passwords
from app.services.sessions import end_all_logins
from app.store import store

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024  # as the login form accepts


class MemberError(ValueError):
    """A member cannot be created or changed as asked."""


class Ended(TypedDict, total=False):
    """What a password change or a suspension ended: audited as the event's detail, and shown."""

    sessions_ended: int
    tokens_revoked: int
    email_change_cancelled: str  # the address a pending change would have set
    api_keys_paused: int  # a suspension: the member's unrevoked API keys, refused until it is lifted


def create_member(
    email: str,
    name: str,
    password: str | None,
    tier: str = Tier.BASIC,
    role: str = Role.MEMBER,
    profile_id: str | None = None,
    email_verified: bool = False,
) -> User:
    """A new member. The address is unverified unless the caller vouches for it (demo data, tests):
    `email_verified` becomes true when the member follows a mailed link. Without a password (an
    invitation) the member cannot sign in until they set one through the invitation link: a
    random one is hashed, so a sign-in attempt costs the same as for anyone else. Flushed (the
    caller needs its id for the audit row and the mailed link); the caller commits."""
    email = member_email(email)
    if not (name or "").strip():
        raise MemberError("name is required")
    if tier not in {t.value for t in Tier}:
        raise MemberError(f"tier must be one of {', '.join(t.value for t in Tier)}")
    if role not in {r.value for r in Role}:
        raise MemberError(f"role must be one of {', '.join(r.value for r in Role)}")
    if password is not None:
        check_password_rules(password, email, name)
    if db.session.scalar(db.select(User.id).where(User.email == email)):
        raise MemberError(f"a member with email {email} already exists")
    profile_id = linkable_profile_id(profile_id)
    user = User(
        email=email,
        name=name.strip(),
        tier=tier,
        role=role,
        email_verified=email_verified,
        password_hash=passwords.hash(password if password is not None else new_secret(32)),
        profile_id=profile_id,
    )
    db.session.add(user)
    db.session.flush()
    return user


def member_email(typed: str | None) -> str:
    """The address a member may have, as stored and mailed (app/core/email_address.py), or MemberError
    saying why not: the one check for every place an address enters."""
    try:
        return stored_form(typed)
    except InvalidEmail as error:
        raise MemberError(f"Not a valid email address: {error}") from None


# Built once (the login page asks on every sign-in): building a statement and its cache key cost
# more than running it.
_BY_EMAIL = select(User).where(User.email == bindparam("email"))


def member_by_email(email: str | None) -> User | None:
    """The member with this address (compared as stored: normalised), or None."""
    return db.session.scalar(_BY_EMAIL, {"email": User.normalize_email(email or "")})


def find_member(email: str) -> User:
    user = member_by_email(email)
    if user is None:
        raise MemberError(f"no member with email {email}")
    return user


def set_password(user: User, password: str) -> None:
    """A new password and nothing else (demo data; a member's or support's change is
    `change_password`, which ends sessions and is audited). The caller commits."""
    check_password_rules(password, user.email, user.name)
    user.password_hash = passwords.hash(password)


def store_password_hash(member_id: str, password_hash: str) -> None:
    """The member's password under a new hash of the same password (passwords.check made it at
    sign-in: the configured cost changed). Flushes only; the caller commits."""
    db.session.execute(update(User).where(User.id == member_id).values(password_hash=password_hash))


def change_password(
    user: User,
    password: str,
    actor: User | None = None,
    disconnect_apps: bool = False,
    action: str = "password.changed",
) -> Ended:
    """A new password for `user` (the member on the account page, or support with the CLI). Every
    session of theirs ends: whoever signed in with the old password is signed out. After a
    compromise, `disconnect_apps` also revokes every app's consent and tokens (a grant obtained
    with the stolen password would outlive it otherwise). Unused mailed links that could still hand
    the account to whoever had the old password stop working: a pending change of address and the
    reset links. Audited here, for every caller, as `action` (a reset by
    mail is `password.reset_completed`).
    Returns what ended; the caller commits."""
    check_password_rules(password, user.email, user.name)
    user.password_hash = passwords.hash(password)
    ended: Ended = {"sessions_ended": end_all_logins(user)}
    if disconnect_apps:
        ended["tokens_revoked"] = revoke_consent(user, None)
    cancelled = links.void_email_changes(user)
    if cancelled:
        ended["email_change_cancelled"] = cancelled[-1]
    links.void(user, LinkPurpose.RESET)
    record(action, actor=actor, subject=user, **ended)
    return ended


def check_password_rules(password: str, email: str | None = None, name: str | None = None) -> None:
    """A new password's rules: its length, and not easily guessed (app/services/password_strength.py,
    told the member's address and name). MemberError says which rule, and why."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise MemberError(f"password must be at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise MemberError(f"password must be at most {MAX_PASSWORD_LENGTH} characters")
    reason = password_strength.weakness(password, password_strength.member_words(email, name))
    if reason is not None:
        raise MemberError(reason)


def set_tier(user: User, tier: str, actor: User | None = None) -> bool:
    """Change the membership. Reach is checked on every data request, so a downgrade takes
    the higher tier's scopes away from existing tokens at once; it also takes them out of the
    member's consents and tokens, so a later upgrade needs a new consent. A change is audited here, for
    every caller (console, CLI). True when it changed; the caller commits."""
    if tier not in {t.value for t in Tier}:
        raise MemberError(f"tier must be one of {', '.join(t.value for t in Tier)}")
    before = user.tier
    user.tier = tier
    if before == tier:
        return False
    withdrawn = withdraw_beyond_tier(user)
    record("user.tier_changed", actor=actor, subject=user, tier=tier, previous=before, **withdrawn)
    return True


def set_role(user: User, role: str, actor: User | None = None) -> bool:
    """Change what the member may do in the console (member, developer, admin); audited here,
    for every caller (console, CLI). The last administrator keeps the role: without one, nobody
    could manage keys or members from the console again. True when it changed; the caller commits."""
    if role not in {r.value for r in Role}:
        raise MemberError(f"role must be one of {', '.join(r.value for r in Role)}")
    before = user.role
    if before == Role.ADMIN and role != Role.ADMIN and _admin_count() <= 1:
        raise MemberError("Not changed: this is the only administrator.")
    user.role = role
    if before == role:
        return False
    record("user.role_changed", actor=actor, subject=user, role=role, previous=before)
    return True


def _admin_count() -> int:
    return db.session.scalar(db.select(db.func.count(User.id)).where(User.role == Role.ADMIN))


def linkable_profile_id(profile_id: str | None) -> str | None:
    """A catalog profile id a member can be linked to (canonical form), or None for no link."""
    if profile_id is None or profile_id == "":
        return None
    try:
        canonical = str(uuid.UUID(profile_id))
    except ValueError:
        raise MemberError(f"not a profile id (UUID): {profile_id!r}") from None
    if db.session.get(Profile, canonical) is None:
        raise MemberError(f"no catalog profile with id {canonical}")
    return canonical


def suspend_member(user: User, actor: User | None = None, reason: str | None = None) -> Ended:
    """Suspend a member: sign-in is refused, every session ends, and what every app holds ends
    (end_grants: tokens revoked, codes not yet redeemed deleted, pending sign-in requests closed);
    mailed links are deleted. Their API keys pause: refused while the suspension lasts
    (ApiKey.is_paused), not revoked. Consents are kept for when the suspension is lifted. Audited
    here, for every caller; the caller commits."""
    from app.models import ApiKey, OneTimeLink

    if actor is not None and actor.id == user.id:
        raise MemberError("You cannot suspend your own account.")
    if user.is_suspended:
        return {}
    user.suspended_at = utcnow()
    ended: Ended = {
        "sessions_ended": end_all_logins(user),
        "tokens_revoked": store().tokens.end_grants(user_id=user.id),
    }
    ended["api_keys_paused"] = db.session.execute(
        select(db.func.count(ApiKey.id)).where(ApiKey.owner_id == user.id, ApiKey.revoked_at.is_(None))
    ).scalar_one()
    db.session.execute(db.delete(OneTimeLink).where(OneTimeLink.user_id == user.id, OneTimeLink.used_at.is_(None)))
    record("user.suspended", actor=actor, subject=user, reason=(reason or "")[:200] or None, **ended)
    return ended


def unsuspend_member(user: User, actor: User | None = None) -> bool:
    """Lift a suspension: the member may sign in again (apps must ask for new tokens) and their API
    keys that were not revoked work again. True when it changed; audited here; the caller commits."""
    if not user.is_suspended:
        return False
    user.suspended_at = None
    record("user.unsuspended", actor=actor, subject=user)
    return True
