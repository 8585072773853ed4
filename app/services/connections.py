"""The apps a member is connected to: what each may read, since when, when it last got a token.

An app is connected when the member consented to it, or - for a trusted first-party app, which
skips the consent page - when it holds a live token of the member. No Flask globals here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.core.scopes import SCOPES, scope_list
from app.models import User
from app.models.base import utcnow
from app.store import store
from app.store.apps import App


@dataclass(frozen=True)
class Connection:
    client: App
    scopes: list[dict[str, str]]  # {"name", "description"} in the scope table's plain words
    connected_at: datetime
    last_used_at: datetime | None  # the last time the app got a token for the member
    consented: bool  # False: a trusted first-party app, connected without a consent page

    @property
    def disabled(self) -> bool:
        return not self.client.is_active


def plain_words(scope: str) -> list[dict[str, str]]:
    return [{"name": s, "description": SCOPES[s].description} for s in scope_list(scope) if s in SCOPES]


def connections(user: User, now: datetime | None = None) -> list[Connection]:
    """Every app connected to `user`, most recently used first. Deleted apps are gone already
    (deleting an app removes its consents and revokes its tokens)."""
    now = now or utcnow()
    usage = store().tokens.last_use_by_app(user.id)
    result = [
        Connection(client, plain_words(scope), granted_at, usage.get(client.id), True)
        for client, scope, granted_at in store().apps.consented(user.id)
    ]
    consented_ids = {c.client.id for c in result}
    held = {
        pk: grant for pk, grant in store().tokens.live_grants_by_app(user.id, now).items() if pk not in consented_ids
    }
    for pk, client in store().apps.by_ids(held).items():
        if not client.is_deleted:
            grant = held[pk]
            result.append(
                Connection(client, plain_words(" ".join(grant.scopes)), grant.first_issued, usage.get(pk), False)
            )
    return sorted(result, key=lambda c: c.last_used_at or c.connected_at, reverse=True)


def is_connected(user: User, client: App, now: datetime | None = None) -> bool:
    return any(c.client.id == client.id for c in connections(user, now))
