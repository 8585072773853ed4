"""API keys: create, list, rotate, revoke, and find the live key a request presents.

Shared by the console pages and the `flask api-keys` commands, so a change made either way does
the same thing and leaves the same audit event. Functions here only `flush()`: the view or the
command that calls them commits once (one unit of work).

Rotation issues a new key at once; the old one keeps working for an optional grace period (at
most 7 days, as client secrets), so a deployment can switch without an outage; with no grace
(the default on the command line, and the choice after a leak) it stops at once. Revocation is
immediate and final.

Workspace keys (`mwk_`) are a member's, not a developer's: made on the account page for one of the
member's rosters (`create_workspace_key`), they reach that roster's profiles on `/v1` and nothing
else (app/web/api/gateway.py), at most 60 requests a minute and 10,000 a UTC day. They are rotated
and revoked like the others; the console, which is for developers' keys, neither lists nor manages
them (the command line finds any key by id, for support)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from limits import RateLimitItem, RateLimitItemPerMinute, RateLimitItemPerSecond
from sqlalchemy import bindparam, or_, select
from sqlalchemy.orm import joinedload

from app.core.extensions import db
from app.models import ApiKey, KeyKind, KeyPlan, Role, User
from app.models.base import new_secret, sha256_hex, utcnow
from app.services.audit import record
from app.store.rosters import StoredRoster

PREFIXES = {KeyKind.SECRET: "msk_", KeyKind.PUBLISHABLE: "mpk_", KeyKind.WORKSPACE: "mwk_"}
WORKSPACE_PREFIX = PREFIXES[KeyKind.WORKSPACE]
CONSOLE_KINDS = (KeyKind.SECRET.value, KeyKind.PUBLISHABLE.value)  # what the console and `flask api-keys` create
CONSOLE_PLANS = tuple(p.value for p in KeyPlan if p != KeyPlan.WORKSPACE)
VISIBLE = 8  # characters of the random part shown in the console
MAX_GRACE = timedelta(days=7)
MAX_DOMAINS = 20
KEY_SHAPE = re.compile(r"m[spw]k_[A-Za-z0-9_-]{43}")
MAX_WORKSPACE_KEYS = 5  # live keys per roster: one per integration, with room to rotate by replacement
HOST = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?")


@dataclass(frozen=True)
class PlanLimits:
    """A plan's budget: `window` is what is enforced (per second or per minute); the per-minute
    figure is what the RateLimit-* headers report (the spec counts per minute). `per_day`, when
    set, is a hard cap on a UTC day's requests besides (workspace keys)."""

    window: RateLimitItem
    per_minute: int
    per_day: int | None = None


PLAN_LIMITS: dict[str, PlanLimits] = {
    KeyPlan.PAYG: PlanLimits(RateLimitItemPerMinute(300), 300),
    KeyPlan.START: PlanLimits(RateLimitItemPerSecond(5), 300),
    KeyPlan.BUILD: PlanLimits(RateLimitItemPerSecond(25), 1500),
    KeyPlan.SCALE: PlanLimits(RateLimitItemPerSecond(100), 6000),
    KeyPlan.WORKSPACE: PlanLimits(RateLimitItemPerMinute(60), 60, per_day=10_000),
}


def limits_of(key: ApiKey) -> PlanLimits:
    """The limits in force for a key: an enterprise key's own (set by an admin:
    app/services/billing/enterprise.py), else its plan's. A per-second limit is also held to 60
    times that per minute, unless a per-minute one is given."""
    if key.custom_per_second:
        per_minute = key.custom_per_minute or key.custom_per_second * 60
        return PlanLimits(RateLimitItemPerSecond(key.custom_per_second), per_minute)
    if key.custom_per_minute:
        return PlanLimits(RateLimitItemPerMinute(key.custom_per_minute), key.custom_per_minute)
    return PLAN_LIMITS.get(key.plan) or PLAN_LIMITS[KeyPlan.PAYG]


class ApiKeyError(ValueError):
    """A key request that cannot be honoured (bad name, plan, domain list, grace)."""


class KeyNotFound(LookupError):
    """No key with that id (or not one the member may manage)."""


def can_own_keys(user: User | None) -> bool:
    return user is not None and user.holds_api_keys


def normalize_domains(values: list[str]) -> list[str]:
    """Host names a publishable key may be used from: `example.com`, `app.example.com:8443`, a
    full origin (`https://example.com`) reduced to its host, or every subdomain of a domain,
    `*.example.com` (a wildcard only as the whole leftmost label, over a name of two labels at
    least: `*.com` would be anyone's page). Lower-case, no path."""
    hosts: list[str] = []
    for raw in values:
        value = raw.strip().lower()
        if not value:
            continue
        if "://" in value:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or parts.path not in ("", "/") or parts.query or parts.username:
                raise ApiKeyError(f"not a page origin: {raw.strip()}")
            value = parts.netloc
        wildcard = value.startswith("*.")
        host = value[2:] if wildcard else value
        if len(host) > 253 or not HOST.fullmatch(host) or "*" in host:
            raise ApiKeyError(f"not a host name: {raw.strip()}")
        if wildcard and host.split(":")[0].count(".") < 1:
            raise ApiKeyError(f"a wildcard needs a domain of two labels at least (*.example.com): {raw.strip()}")
        if value not in hosts:
            hosts.append(value)
    if len(hosts) > MAX_DOMAINS:
        raise ApiKeyError(f"at most {MAX_DOMAINS} domains")
    return hosts


def domain_allows(domains: list[str] | None, host: str | None) -> bool:
    """Whether a page on `host` (as its Origin names it, port included) may use a key listing
    `domains`: an exact entry, or `*.example.com` for any subdomain of example.com (at any depth;
    not example.com itself, which is listed on its own when meant)."""
    if not host:
        return False
    for domain in domains or []:
        if domain == host:
            return True
        if domain.startswith("*.") and host.endswith(domain[1:]) and len(host) > len(domain) - 1:
            return True
    return False


def edit_key(key: ApiKey, name: str, domains: list[str], actor: User | None = None) -> list[str]:
    """Rename a key and, for a publishable key, change its domains (the value, kind and plan stay).
    Returns what changed; refused with ApiKeyError before anything is written; audited as
    `apikey.changed`. A revoked key is not edited."""
    if key.is_revoked:
        raise ApiKeyError("a revoked key cannot be changed")
    name = (name or "").strip()
    if not name or len(name) > 120:
        raise ApiKeyError("a name of 1 to 120 characters is required")
    hosts = normalize_domains(domains or [])
    if key.is_publishable and not hosts:
        raise ApiKeyError("a publishable key needs at least one domain")
    if not key.is_publishable and hosts:
        raise ApiKeyError("a secret key is for servers: it takes no domains")
    changed = [field for field, new in (("name", name), ("domains", hosts)) if getattr(key, field) != new]
    if changed:
        key.name, key.domains = name, hosts
        db.session.flush()
        record("apikey.changed", actor=actor, key_id=key.id, fields=changed, name=name, domains=hosts or None)
    return changed


def _new_value(kind: KeyKind) -> str:
    return PREFIXES[kind] + new_secret(32)  # 256 random bits


def create_key(
    owner: User,
    name: str,
    kind: str,
    plan: str = KeyPlan.PAYG.value,
    domains: list[str] | None = None,
    actor: User | None = None,
) -> tuple[ApiKey, str]:
    """A new key and its value (shown once; only the hash is kept)."""
    name = (name or "").strip()
    if not name or len(name) > 120:
        raise ApiKeyError("a name of 1 to 120 characters is required")
    if kind not in CONSOLE_KINDS:
        raise ApiKeyError(f"kind must be one of {', '.join(CONSOLE_KINDS)}")
    if plan not in CONSOLE_PLANS:
        raise ApiKeyError(f"plan must be one of {', '.join(CONSOLE_PLANS)}")
    if not can_own_keys(owner):
        raise ApiKeyError("only developers and admins hold API keys")
    hosts = normalize_domains(domains or [])
    if kind == KeyKind.PUBLISHABLE and not hosts:
        raise ApiKeyError("a publishable key needs at least one domain")
    if kind == KeyKind.SECRET and hosts:
        raise ApiKeyError("a secret key is for servers: it takes no domains")
    value = _new_value(KeyKind(kind))
    key = ApiKey(
        owner_id=owner.id,
        owner=owner,
        name=name,
        kind=kind,
        plan=plan,
        domains=hosts,
        prefix=value[: 4 + VISIBLE],
        secret_hash=sha256_hex(value),
        created_at=utcnow(),
    )
    db.session.add(key)
    db.session.flush()
    record("apikey.created", actor=actor, key_id=key.id, name=key.name, kind=kind, plan=plan)
    return key, value


def create_workspace_key(owner: User, roster: StoredRoster, name: str, actor: User | None = None) -> tuple[ApiKey, str]:
    """A new workspace key on one of `owner`'s rosters, and its value (shown once; only the hash is
    kept). Any member may hold one: the key reaches only profiles they put on their roster."""
    name = (name or "").strip()
    if not name or len(name) > 120:
        raise ApiKeyError("a name of 1 to 120 characters is required")
    if roster.owner_id != owner.id:
        raise ApiKeyError("a workspace key reaches one of its owner's own rosters")
    if roster.live_keys >= MAX_WORKSPACE_KEYS:
        raise ApiKeyError(f"a roster has at most {MAX_WORKSPACE_KEYS} live keys: revoke one first")
    value = _new_value(KeyKind.WORKSPACE)
    key = ApiKey(
        owner_id=owner.id,
        owner=owner,
        name=name,
        kind=KeyKind.WORKSPACE.value,
        plan=KeyPlan.WORKSPACE.value,
        domains=[],
        roster_id=roster.id,
        prefix=value[: 4 + VISIBLE],
        secret_hash=sha256_hex(value),
        created_at=utcnow(),
    )
    db.session.add(key)
    db.session.flush()
    record(
        "apikey.created",
        actor=actor,
        key_id=key.id,
        name=key.name,
        kind=key.kind,
        plan=key.plan,
        roster_id=roster.id,
    )
    return key, value


def workspace_keys(roster_id: str) -> list[ApiKey]:
    """The workspace keys of a roster, newest first (revoked ones too: the page says so)."""
    stmt = (
        select(ApiKey)
        .where(ApiKey.roster_id == roster_id, ApiKey.kind == KeyKind.WORKSPACE)
        .order_by(ApiKey.created_at.desc(), ApiKey.id)
    )
    return list(db.session.scalars(stmt))


def live_workspace_keys(roster_id: str) -> list[ApiKey]:
    return [key for key in workspace_keys(roster_id) if not key.is_revoked]


def rotate_key(key: ApiKey, grace: timedelta | None = None, actor: User | None = None) -> str:
    """A new value for the key (same id, plan, usage); the old one stops now or after `grace`."""
    if key.is_revoked:
        raise ApiKeyError("a revoked key cannot be rotated")
    if grace is not None and not timedelta(0) <= grace <= MAX_GRACE:
        raise ApiKeyError("the grace period is 0 to 7 days")
    now = utcnow()
    value = _new_value(KeyKind(key.kind))
    if grace:
        key.previous_secret_hash, key.previous_expires_at = key.secret_hash, now + grace
    else:
        key.previous_secret_hash, key.previous_expires_at = None, None
    key.secret_hash, key.prefix, key.rotated_at = sha256_hex(value), value[: 4 + VISIBLE], now
    db.session.flush()
    record(
        "apikey.rotated",
        actor=actor,
        key_id=key.id,
        name=key.name,
        grace_seconds=int(grace.total_seconds()) if grace else 0,
    )
    return value


def revoke_key(key: ApiKey, actor: User | None = None) -> bool:
    """Stop the key at once (the previous value of a rotation too). False when it already was."""
    if key.is_revoked:
        return False
    key.revoked_at = utcnow()
    key.previous_secret_hash, key.previous_expires_at = None, None
    db.session.flush()
    record("apikey.revoked", actor=actor, key_id=key.id, name=key.name)
    return True


def visible_keys(user: User) -> list[ApiKey]:
    """The console's keys a member holds, newest first (an admin sees everyone's). Workspace keys
    are managed on their owner's account page."""
    stmt = select(ApiKey).where(ApiKey.kind != KeyKind.WORKSPACE).order_by(ApiKey.created_at.desc(), ApiKey.id)
    if user.role != Role.ADMIN:
        stmt = stmt.where(ApiKey.owner_id == user.id)
    return list(db.session.scalars(stmt))


def find_key(key_id: str, user: User | None = None) -> ApiKey:
    """A key by id; with `user`, only a console key they may manage (an admin manages every one).
    Without `user` (the command line), any key."""
    key = db.session.get(ApiKey, (key_id or "")[:36])
    if key is None or (
        user is not None and (key.is_workspace or (user.role != Role.ADMIN and key.owner_id != user.id))
    ):
        raise KeyNotFound(f"no API key with id {key_id}")
    return key


def find_workspace_key(key_id: str, roster_id: str) -> ApiKey:
    """A workspace key of this roster, by id (the account page manages a roster's keys)."""
    key = db.session.get(ApiKey, (key_id or "")[:36])
    if key is None or not key.is_workspace or key.roster_id != roster_id:
        raise KeyNotFound(f"no workspace key with id {key_id}")
    return key


# Built once: every key-door request runs it (SQLAlchemy caches the compiled form by its shape).
_BY_DIGEST = (
    select(ApiKey)
    .options(joinedload(ApiKey.owner))
    .where(or_(ApiKey.secret_hash == bindparam("digest"), ApiKey.previous_secret_hash == bindparam("digest")))
)


def live_key(value: str | None) -> ApiKey | None:
    """The live key a request presents: current value, or the previous one inside its grace.
    Revoked keys, paused keys (their owner suspended, or - a console key - no longer a developer
    or admin: ApiKey.is_paused), and values of the wrong shape are None: one indexed lookup at most, the
    owner joined, so the owner's standing costs no query of its own. The gateway refuses before
    it meters."""
    if not value or not KEY_SHAPE.fullmatch(value):
        return None
    digest = sha256_hex(value)
    key = db.session.scalar(_BY_DIGEST, {"digest": digest})
    if key is None or key.is_revoked or key.is_paused:
        return None
    if key.secret_hash != digest and (key.previous_expires_at is None or key.previous_expires_at <= utcnow()):
        return None
    return key


def key_json(key: ApiKey) -> dict[str, Any]:
    """What the console and the CLI show of a key (never its value or hash)."""
    return {
        "id": key.id,
        "name": key.name,
        "kind": key.kind,
        "plan": key.plan,
        "prefix": key.prefix,
        "domains": list(key.domains or []),
        "roster_id": key.roster_id,
        "status": key.status,
        "owner": key.owner.email if key.owner else None,
        "created_at": key.created_at.isoformat(),
        "rotated_at": key.rotated_at.isoformat() if key.rotated_at else None,
        "previous_valid_until": key.previous_expires_at.isoformat() if key.previous_expires_at else None,
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
        "custom_per_minute": key.custom_per_minute,
        "custom_per_second": key.custom_per_second,
    }
