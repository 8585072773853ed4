"""What an administrator sees about one member on the console's member page: the address and
whether it is verified, the two-step methods, the last sign-in, the live sessions, the connected
apps, the API keys and the latest audit events. One read, gathered here so the page stays thin and
every fact comes from the service that owns it (sessions, connections, second factors, audit)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from app.core.extensions import db
from app.models import ApiKey, AuditEvent, User
from app.models.second_factor import Passkey
from app.services import passkeys, second_factor
from app.services.activity import SIGN_IN
from app.services.apikeys import every_key
from app.services.audit import AuditFilter, Page, audit_page
from app.services.connections import Connection, connections
from app.services.session_list import SessionLine, live_sessions

RECENT_EVENTS = 15


@dataclass(frozen=True)
class MemberOverview:
    user: User
    totp: bool
    passkeys: list[Passkey]
    recovery_codes_left: int
    last_sign_in: datetime | None
    sessions: list[SessionLine]
    connections: list[Connection]
    api_keys: list[ApiKey]
    events: Page

    @property
    def two_step_methods(self) -> list[str]:
        """The second steps the member can sign in with, in words ("authenticator app", "2 passkeys")."""
        methods = ["authenticator app"] if self.totp else []
        if self.passkeys:
            methods.append(f"{len(self.passkeys)} passkey{'s' if len(self.passkeys) != 1 else ''}")
        return methods


def last_sign_in(user: User) -> datetime | None:
    """When the member last signed in (the audit trail's latest `signin.ok` they made)."""
    return db.session.scalar(
        select(AuditEvent.created_at)
        .where(AuditEvent.actor_id == user.id, AuditEvent.action == SIGN_IN)
        .order_by(AuditEvent.created_at.desc())
        .limit(1)
    )


def owned_keys(user: User) -> list[ApiKey]:
    """Every API key the member owns, workspace keys included, newest first."""
    return every_key(user.id)


def member_overview(user: User) -> MemberOverview:
    return MemberOverview(
        user=user,
        totp=second_factor.has_totp(user),
        passkeys=passkeys.passkeys_of(user),
        recovery_codes_left=second_factor.recovery_codes_left(user),
        last_sign_in=last_sign_in(user),
        sessions=live_sessions(user, current_id=None),
        connections=connections(user),
        api_keys=owned_keys(user),
        events=audit_page(AuditFilter(member=user), 1, size=RECENT_EVENTS),
    )
