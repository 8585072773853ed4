"""The one table of scopes: what each unlocks, the claims it releases, and how the consent
page words it. The ID token, userinfo, the consent page and the data endpoints all read it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    name: str
    description: str  # plain words, shown on the consent page
    claims: tuple[str, ...] = ()
    optional: bool = True  # the member may untick it on the consent page
    required_tier: str | None = None  # membership needed to be granted and to use it


SCOPES: dict[str, Scope] = {
    s.name: s
    for s in (
        Scope("openid", "Sign you in with your Credits ID", ("sub",), optional=False),
        Scope("profile", "See your name", ("name",)),
        Scope("email", "See your email address", ("email", "email_verified")),
        Scope("credits:read", "Read your credits"),
        Scope("analytics:read", "Read your analytics", required_tier="pro"),
        Scope("offline_access", "Stay connected when you are away (it can refresh its access without you)"),
    )
}

SUPPORTED_SCOPES: tuple[str, ...] = tuple(SCOPES)
TIER_ORDER = {"basic": 0, "pro": 1}


def scope_list(scope: str | Iterable[str] | None) -> list[str]:
    """Split a space-delimited scope string, keep order, drop duplicates and blanks."""
    if not scope:
        return []
    items = scope.split() if isinstance(scope, str) else list(scope)
    return list(dict.fromkeys(items))


def known_scopes(scope: str | Iterable[str] | None) -> list[str]:
    """Drop what this provider does not know (unknown scopes are ignored, not an error)."""
    return [s for s in scope_list(scope) if s in SCOPES]


def tier_allows(scope: str, tier: str) -> bool:
    """The one rule of reach by membership: is `scope` usable on membership `tier`?"""
    needed = SCOPES[scope].required_tier if scope in SCOPES else None
    return needed is None or TIER_ORDER.get(tier, -1) >= TIER_ORDER[needed]


def grantable(scopes: Iterable[str], tier: str) -> list[str]:
    return [s for s in scopes if tier_allows(s, tier)]


def claims_for(scopes: Iterable[str]) -> set[str]:
    names: set[str] = set()
    for s in scopes:
        if s in SCOPES:
            names.update(SCOPES[s].claims)
    return names


def join(scopes: Iterable[str]) -> str:
    return " ".join(scopes)
