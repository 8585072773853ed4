"""Consent decisions: what a member already granted, what is missing, recording a grant, and
revoking one. What is stored, and how (one statement on PostgreSQL), is the store's."""

from __future__ import annotations

from functools import partial
from typing import Any, TypedDict

from app.core.scopes import SCOPES, grantable, join, tier_allows
from app.models import User
from app.models.base import utcnow
from app.store import store
from app.store.apps import App
from app.store.members import MemberFacts


class Withdrawn(TypedDict):
    """What a downgrade took back: audited as the event's detail."""

    consents_narrowed: int
    tokens_narrowed: int


def remembered_scopes(user: MemberFacts, client: App) -> list[str]:
    """What the member already granted the app."""
    return store().consents.remembered(user.id, client.id)


def missing_scopes(requested: list[str], remembered: list[str]) -> list[str]:
    """What the member has not granted yet; empty means a remembered consent covers the request."""
    have = set(remembered)
    return [s for s in requested if s not in have]


def decide_granted(requested: list[str], ticked: list[str] | None, tier: str) -> list[str]:
    """The scopes a consent grants: those requested that the member kept ticked (mandatory
    ones always) and that the membership includes."""
    keep = set(ticked) if ticked is not None else set(requested)
    chosen = [s for s in requested if not SCOPES[s].optional or s in keep]
    return grantable(chosen, tier)


def consented_scope(remembered: list[str] | tuple[str, ...], asked: list[str], granted: list[str]) -> str:
    """The consent to remember after the member's latest answer: for each scope the page `asked`
    about, whether it was granted now (an unticked scope granted before is taken back), and the
    earlier grants (`remembered`) of scopes not asked about this time; in the scope table's order,
    as shown."""
    chosen = {s for s in remembered if s not in asked} | set(granted)
    return join(s for s in SCOPES if s in chosen)


def answer_request(
    request_id: str,
    user: MemberFacts,
    client: App,
    scope: str,
    event: dict[str, Any],
    code: dict[str, Any],
) -> bool:
    """The member allowed the pending request `request_id`: consume it (its single-use mark) and,
    only if this caller did, remember the consent (`scope`: `consented_scope`), write its audit
    line (`event`: audit.event_row) and store the authorization code (`code`: its row, drawn by
    grants.draw_code). True when this caller consumed the request; nothing is written otherwise."""
    now = utcnow()
    consent = {"user_id": user.id, "client_id": client.id, "scope": scope, "granted_at": now, "updated_at": now}
    return store().requests.answer(request_id, consent, event, code)


def revoke_consent(user: User, client: App | None) -> int:
    """Forget the consent and end everything it allowed, at once: the app's tokens for the member,
    its codes not yet redeemed and the member's pending requests to it; every app's when `client`
    is None. Returns the tokens revoked; the caller commits."""
    client_pk = client.id if client is not None else None
    store().consents.forget(user.id, client_pk)
    return store().tokens.end_grants(user_id=user.id, client_id=client_pk)


def withdraw_beyond_tier(user: User) -> Withdrawn:
    """After a downgrade: take the scopes the new membership lacks out of the member's consents and
    live tokens. Reach is checked on every request anyway; this makes the loss stick, so that an
    upgrade later asks the member again instead of reviving an old grant. The caller commits."""
    keep = partial(grantable, tier=user.tier)
    return {
        "consents_narrowed": store().consents.narrow(user.id, keep),
        "tokens_narrowed": store().tokens.narrow_live(user.id, keep),
    }


def describe(scopes: list[str], tier: str) -> list[dict[str, Any]]:
    """The consent page's lines: plain words per scope, and whether the plan includes it."""
    return [
        {
            "name": s,
            "description": SCOPES[s].description,
            "optional": SCOPES[s].optional,
            "included": tier_allows(s, tier),
        }
        for s in scopes
        if s in SCOPES
    ]
