"""Each API key's recent requests, for its owner: what the console's key page lists (time, method,
path, status, and why a refused call was refused), so a developer can trace what their key did and
tell a revoked key from a mistyped one.

What is kept (app/models/key_activity.py): every request that came with a key the service knows -
answered, refused by the key door (401, 402, 403, 429) or by the API (400, 404) - through `/v1`,
the widget API and the tool server (a tool call names its tool). A key is known when the request's
value is one of its values, live or not: a revoked key, a paused one (its owner suspended) or a
rotated-out value past its grace is still found by its hash, and its refusal says which it was. A
value that matches no key (mistyped, made up, malformed) names nobody: it is in the access log by
its request id, on no key's page. Secret and publishable keys only: a workspace key's page is its
member's account page, which lists no requests.

What is not kept: the query string (a type-ahead's `q` is someone's search), any header or body,
the key's value. At most KEY_ACTIVITY_KEEP requests per key, none older than KEY_ACTIVITY_DAYS.

The web edge collects entries as requests end and hands them over in batches (`save`), so no
request waits on this table, nor on finding whose a refused value is (app/web/key_activity.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.orm import joinedload

from app.core.extensions import db
from app.models import ApiKey
from app.models.base import sha256_hex, utcnow
from app.models.key_activity import MESSAGE_LENGTH, PATH_LENGTH
from app.services.apikeys import KEY_SHAPE
from app.store import store
from app.store.key_activity import KeyRequestRecord as KeyRequestRecord  # what the key page lists

API, WIDGET, TOOLS = "api", "widget", "tools"  # the surfaces, as the gateway names them


@dataclass(frozen=True, slots=True)
class Entry:
    """One request made with a key, waiting to be written: named by the key's id when the door took
    the key, else by the SHA-256 of the value it refused (resolved, or dropped, when written)."""

    key_id: str | None
    digest: str | None
    at: datetime
    surface: str
    method: str
    path: str
    tool: str | None
    status: int
    message: str | None
    request_id: str


def entry(
    key_id: str | None,
    surface: str,
    method: str,
    path: str,
    status: int,
    request_id: str,
    message: str | None = None,
    tool: str | None = None,
    at: datetime | None = None,
    digest: str | None = None,
) -> Entry:
    """An entry cut to the columns' sizes (a path is the caller's to choose)."""
    return Entry(
        key_id,
        digest,
        at or utcnow(),
        surface,
        method[:8],
        path[:PATH_LENGTH],
        tool[:64] if tool else None,
        status,
        message[:MESSAGE_LENGTH] if message else None,
        request_id[:128],
    )


def refused_value_digest(value: str | None) -> str | None:
    """What a refused request's entry keeps of the value it sent, until it is written: its SHA-256
    (as the keys table holds it), when it has a key's shape; None for anything else."""
    return sha256_hex(value) if value and KEY_SHAPE.fullmatch(value) else None


def refusal_reason(key: ApiKey, digest: str) -> str:
    """Why the key door refused `digest`'s value of `key`, as the key stands now."""
    if key.is_revoked:
        return "the key is revoked"
    if key.is_paused:
        if key.owner.is_suspended:
            return "the key is paused: its owner's account is suspended"
        return "the key is paused: its owner no longer holds API keys"
    if key.secret_hash != digest:
        return "a previous value of the key, no longer valid since it was rotated"
    return "the key did not work at the time"  # paused then, working again now


LOOKUP_CHUNK = 500  # values per lookup when a batch holds many refusals


def refused_keys(digests: set[str]) -> dict[str, tuple[str, str]]:
    """The keys that refused values belong to: {digest: (key id, reason)}, for the values that are
    one of a key's (its current value, or the previous one of a rotation); the others - mistyped,
    made up, forgotten - are nobody's and absent. A lookup per LOOKUP_CHUNK values, by the indexed
    hashes (the owner joined, for a paused key's reason)."""
    found: dict[str, tuple[str, str]] = {}
    ordered = sorted(digests)
    for start in range(0, len(ordered), LOOKUP_CHUNK):
        chunk = ordered[start : start + LOOKUP_CHUNK]
        keys = db.session.scalars(
            select(ApiKey)
            .options(joinedload(ApiKey.owner))
            .where(or_(ApiKey.secret_hash.in_(chunk), ApiKey.previous_secret_hash.in_(chunk)))
        ).unique()
        for key in keys:
            for digest in (key.secret_hash, key.previous_secret_hash):
                if digest is not None and digest in digests:
                    found[digest] = (key.id, refusal_reason(key, digest))
    return found


def save(entries: list[Entry], keep: int) -> None:
    """Write `entries` (oldest first) and cut each of their keys back to its newest `keep`. A
    refused value's entry goes to the key the value belongs to, with the reason its key refused
    it, or nowhere. The caller commits."""
    digests = {e.digest for e in entries if e.key_id is None and e.digest is not None}
    owners = refused_keys(digests) if digests else {}
    rows = []
    for e in entries:
        key_id, message = e.key_id, e.message
        if key_id is None:
            owner = owners.get(e.digest or "")
            if owner is None:
                continue  # nobody's value
            key_id, reason = owner
            message = f"{message} — {reason}" if message else reason
        rows.append(
            {
                "key_id": key_id,
                "at": e.at,
                "surface": e.surface,
                "method": e.method,
                "path": e.path,
                "tool": e.tool,
                "status": e.status,
                "message": message[:MESSAGE_LENGTH] if message else None,
                "request_id": e.request_id,
            }
        )
    store().key_activity.add(rows, keep)


def recent(key: ApiKey, limit: int) -> list[KeyRequestRecord]:
    """The key's newest `limit` requests, newest first."""
    return store().key_activity.recent(key.id, limit)
