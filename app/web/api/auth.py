"""Who is calling and what their token reaches (RFC 6750 bearer tokens from this provider).

Checked on every request, in this order, so each refusal says the one thing to fix:
  no token                          -> 401, `WWW-Authenticate: Bearer realm=...`
  unknown, expired, revoked token,
  or its app disabled               -> 401, `error="invalid_token"`
  membership does not include it    -> 403, `error="insufficient_scope"` (asking again won't help:
                                       the plan, read now, not at consent, decides)
  token lacks the scope             -> 403, `error="insufficient_scope"`, `scope="<needed>"`
  another member's profile          -> 403 (reach: a token reads only its member's own data)
The token rule is the provider's own, the same as userinfo's (`live_bearer`, one indexed query by hash)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from flask import current_app, request

from app.core.scopes import scope_list, tier_allows
from app.protocol import tokens
from app.store.members import Member
from app.store.tokens import StoredToken
from app.web.api.envelope import NOT_FOUND, ApiError

# What a tier-gated scope unlocks, in the words of the refusal.
FEATURES = {"analytics:read": "analytics"}
NO_PROFILE = "No credits profile is linked to this account"
OTHER_PROFILE = "This token reaches only its own member's profile"


@dataclass(frozen=True)
class Caller:
    token: StoredToken
    user: Member


def bearer_value() -> str | None:
    """The access token of `Authorization: Bearer <token>` (RFC 6750 2.1), or None."""
    return tokens.bearer_value(request.headers.get("Authorization"))


def challenge(error: str | None = None, description: str | None = None, scope: str | None = None) -> dict[str, str]:
    """RFC 6750 3: the `WWW-Authenticate` header of a refusal."""
    params = [f'realm="{current_app.config["ISSUER_URL"]}"']
    if error:
        params.append(f'error="{error}"')
    if description:
        params.append(f'error_description="{description}"')
    if scope:
        params.append(f'scope="{scope}"')
    return {"WWW-Authenticate": "Bearer " + ", ".join(params)}


def live_token() -> StoredToken | None:
    """The live access token the request carries (not revoked or expired, its app active), or
    None; looked up once per request (the budget and the route both ask)."""
    return tokens.request_bearer(request.environ)


def authenticate(scope: str) -> Caller:
    """The caller behind the bearer token, allowed to use `scope` right now - or an ApiError."""
    if bearer_value() is None:
        raise ApiError(401, "No access token found in request", challenge())
    token = live_token()
    if token is None:
        description = "The access token is invalid, expired or revoked"
        raise ApiError(401, description, challenge("invalid_token", description))
    return allowed(token, scope)


def allowed(token: StoredToken, scope: str) -> Caller:
    """A live token's caller, if it may use `scope` right now (its member's membership includes
    it, and the token was granted it) - or the 403 `insufficient_scope` ApiError. For `/v1` and
    the tool server's sign-in callers alike."""
    user = token.user
    if not tier_allows(scope, user.tier):
        feature = FEATURES.get(scope, scope)
        message = f"Your {user.tier} membership plan does not include {feature}"
        raise ApiError(403, message, challenge("insufficient_scope", message, scope))
    if scope not in scope_list(token.scope):
        message = f"The access token was not granted the {scope} scope"
        raise ApiError(403, message, challenge("insufficient_scope", message, scope))
    return Caller(token, user)


def canonical_uuid(value: str) -> str | None:
    """The lower-case hyphenated form of a UUID, or None when `value` is not one."""
    if len(value) != 36:
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def own_profile_id(caller: Caller, requested: str | None = None) -> str:
    """The one profile a token reaches: its member's own. Any other (well-formed) id is 403,
    whether or not such a profile exists, so the answer reveals nothing about the catalog."""
    if requested is not None:
        wanted = canonical_uuid(requested)
        if wanted is None:
            raise ApiError(404, NOT_FOUND)
        if wanted != caller.user.profile_id:
            raise ApiError(403, OTHER_PROFILE)
    if caller.user.profile_id is None:
        raise ApiError(404, NO_PROFILE)
    return caller.user.profile_id
