"""Resource indicators (RFC 8707): which protected resource a grant is for, and so where its tokens
are accepted.

The provider protects two kinds of resource. Its own APIs - userinfo and the `/v1` data API - take
the tokens of a grant that named no resource, as every relying party's does. The hosted tool server
(MCP_URL) takes only the tokens of a grant that named it: an AI agent asks for
`resource=<MCP_URL>` at the authorization endpoint and at the token endpoint (the MCP authorization
spec requires it of every client), the code remembers it, and every token of the grant carries it
(app/store/tokens.py copies it from the code to each pair, through every rotation). A token carries
one audience, so it is refused everywhere else: a tool server token at `/v1` and userinfo, a
`/v1` token at the tool server (`invalid_token`, RFC 6750 3.1).

At the endpoints a resource the provider does not protect, more than one, or one the token request
names but the grant did not is `invalid_target` (RFC 8707 2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import OAuth2Request
from flask import current_app

RESOURCE = "resource"


class InvalidTargetError(OAuth2Error):
    """RFC 8707 2: the resource asked for is unknown, malformed or not the grant's."""

    error = "invalid_target"
    status_code = 400


def protected_resources(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The resources a grant may name: the tool server's canonical URL (MCP_URL)."""
    return (config["MCP_URL"],)


def _named(payload: Any) -> list[str]:
    """Every `resource` value the request carries (repeatable, RFC 8707 2)."""
    return [str(value) for value in payload.datalist.get(RESOURCE) or ()]


def authorized_resource(request: OAuth2Request) -> str | None:
    """The resource an authorization request asks for, checked (None: the provider's own APIs).
    One at most: a grant's tokens carry one audience."""
    named = _named(request.payload)
    if not named:
        return None
    if len(named) > 1:
        raise InvalidTargetError("Ask for one resource per grant.")
    if named[0] not in protected_resources(current_app.config):
        raise InvalidTargetError("The 'resource' is not a resource this provider protects.")
    return named[0]


def check_token_resource(request: OAuth2Request, bound: str | None) -> None:
    """At the token endpoint (code or refresh): a `resource`, if named, must be the one the grant is
    bound to (`bound`). Omitting it keeps the grant's (RFC 8707 2.2)."""
    named = _named(request.payload)
    if not named:
        return
    if len(named) > 1 or named[0] != bound:
        raise InvalidTargetError("The 'resource' is not the one this grant was authorized for.")


def accepts(token_resource: str | None, here: str | None) -> bool:
    """Whether a token bound to `token_resource` is accepted by the resource `here` (None: the
    provider's own APIs)."""
    return token_resource == here
