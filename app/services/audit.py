"""Writing and reading the audit trail.

`record` adds one event to the current database session; the caller commits it together with
the change it describes, so an event is never written for a change that did not happen.
What is recorded: who, when, from which IP, which app, what - and never a secret (no
passwords, secrets, tokens or codes; the `detail` dict holds only names such as scopes or kids).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from flask import has_request_context, request

from app.core.extensions import db
from app.models import AuditEvent, Role, User
from app.models.base import utcnow
from app.store import store
from app.store.apps import App, RegisteredApp
from app.store.audit_trail import EventQuery
from app.store.members import MemberFacts

# Every action the trail knows, with how the console words it.
ACTIONS: dict[str, str] = {
    "signin.ok": "Signed in",
    "signin.failed": "Failed sign-in",
    "signout.everywhere": "Signed out everywhere",
    "password.changed": "Password changed",
    "password.reset_requested": "Password reset link sent",
    "password.reset_completed": "Password reset by mail link",
    "email.verified": "Email address verified",
    "email.verification_sent": "Verification link sent",
    "email.change_requested": "Email change requested (link sent to the new address)",
    "email.changed": "Email address changed",
    "email.change_cancelled": "Email change cancelled (its link no longer works)",
    "member.invited": "Invitation sent",
    "user.created": "Member created",
    "member.invitation_accepted": "Invitation accepted (first password set)",
    "consent.granted": "Consent granted",
    "consent.revoked": "Consent revoked",
    "app.registered": "App registered",
    "app.changed": "App changed",
    "app.disabled": "App disabled",
    "app.enabled": "App enabled",
    "app.deleted": "App deleted",
    "app.secret_rotated": "Secret rotated",
    "key.rotated": "Signing key rotated",
    "key.retired": "Signing key retired",
    "key.revoked": "Signing key revoked (unpublished at once)",
    "apikey.created": "API key created",
    "apikey.rotated": "API key rotated",
    "apikey.changed": "API key renamed or its domains changed",
    "apikey.revoked": "API key revoked",
    "billing.posted": "Billing ledger entry posted",
    "billing.usage_posted": "Usage posted to a billing ledger",
    "billing.card_added": "Card saved for loading credits",
    "billing.payment_failed": "Card payment failed",
    "billing.plan_changed": "Plan changed",
    "billing.enterprise": "Enterprise terms changed",
    "roster.created": "Roster created",
    "roster.deleted": "Roster deleted (its workspace keys revoked)",
    "roster.profile_added": "Profile added to a roster",
    "roster.profile_removed": "Profile taken off a roster (out of its workspace keys' reach)",
    "user.role_changed": "Role changed",
    "user.tier_changed": "Membership changed",
    "user.suspended": "Member suspended (sessions ended, tokens revoked, API keys paused)",
    "user.unsuspended": "Suspension lifted",
    "session.signed_out": "Signed out one session",
    "2fa.enrolled": "Second factor added",
    "2fa.removed": "Second factor removed",
    "2fa.recovery_code_used": "Signed in with a recovery code",
    "2fa.recovery_codes_renewed": "New recovery codes made",
    "2fa.failed": "Wrong second-factor code",
}
PAGE_SIZE = 50
# What members do through an app. Its developers see that it happened, not who or from where: the
# members agreed to share with the app what the consent page named, not their email or IP with
# the app's team (and a failed sign-in may be someone who never used the app at all).
MEMBER_ACTIONS = frozenset(
    {"signin.ok", "signin.failed", "signout.everywhere", "consent.granted", "consent.revoked", "session.signed_out"}
)


def event_row(
    action: str,
    actor: MemberFacts | None = None,
    client: App | None = None,
    subject: User | None = None,
    source: str | None = None,
    actor_email: str | None = None,
    **detail: object,
) -> dict[str, object]:
    """The columns of one audit event, as `record` writes it (and a step that writes its event in
    its own statement, such as the consent answer on PostgreSQL). Outside a request (the CLI) the
    source is `cli` and there is no IP."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    in_request = has_request_context()
    return {
        "created_at": utcnow(),
        "action": action,
        "actor_id": actor.id if actor else None,
        "actor_email": actor.email if actor else actor_email,
        "subject_id": subject.id if subject else None,
        "client_id": client.id if client else None,
        "ip": ((request.remote_addr or "")[:64] or None) if in_request else None,
        "source": source or ("web" if in_request else "cli"),
        "detail": {k: v for k, v in detail.items() if v is not None},
    }


def record(
    action: str,
    actor: MemberFacts | None = None,
    client: App | None = None,
    subject: User | None = None,
    source: str | None = None,
    actor_email: str | None = None,
    **detail: object,
) -> None:
    """Write an audit event in the caller's transaction (the caller commits)."""
    if db.session.new:
        db.session.flush()  # a member or app created in this unit of work gets its id first
    write_event(event_row(action, actor, client, subject, source, actor_email, **detail))


def write_event(row: dict[str, object]) -> None:
    """Write an event made by `event_row` in the caller's transaction."""
    store().audit.append(row)


@dataclass(frozen=True)
class AuditFilter:
    """What the audit page asks for. `owner` limits the trail to one developer's apps."""

    client: App | None = None
    member: User | None = None
    owner: User | None = None
    # What the search box found: the ids of every app (or member) a partial match named.
    client_ids: tuple[int, ...] | None = None
    member_ids: tuple[str, ...] | None = None
    action: str | None = None  # one of ACTIONS
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive

    def query(self) -> EventQuery:
        """The store's question for this filter."""
        return EventQuery(
            client_id=self.client.id if self.client else None,
            member_id=self.member.id if self.member else None,
            owner_id=self.owner.id if self.owner else None,
            client_ids=self.client_ids,
            member_ids=self.member_ids,
            action=self.action,
            since=self.since,
            until=self.until,
        )


@dataclass(frozen=True)
class Page:
    items: list[AuditEvent]
    number: int  # 1-based
    has_next: bool
    apps: dict[int, RegisteredApp] = field(default_factory=dict)  # the apps the items name, by row id

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def audit_page(f: AuditFilter, number: int = 1, size: int = PAGE_SIZE) -> Page:
    """One page of events. One row more than the page is read to know whether a next page
    exists, instead of counting the whole (growing) table."""
    number = max(1, number)
    rows = store().audit.newest(f.query(), offset=(number - 1) * size, limit=size + 1)
    items = rows[:size]
    apps = store().apps.by_ids({event.client_id for event in items if event.client_id is not None})
    return Page(items=items, number=number, has_next=len(rows) > size, apps=apps)


def describe(event: AuditEvent) -> str:
    return ACTIONS.get(event.action, event.action)


def _hidden_from(event: AuditEvent, viewer: User) -> bool:
    return viewer.role != Role.ADMIN and event.action in MEMBER_ACTIONS and event.actor_id != viewer.id


def who(event: AuditEvent, viewer: User) -> str:
    """The actor as `viewer` may see them: admins see every email, developers their own and their
    team's console actions, and "a member" for what members did."""
    if _hidden_from(event, viewer):
        return "a member"
    return event.actor_email or ("command line" if event.source == "cli" else "unknown account")


def origin(event: AuditEvent, viewer: User) -> str:
    """Where the event came from: the IP for admins (and for one's own actions), else the source."""
    return event.source if _hidden_from(event, viewer) else (event.ip or event.source)
