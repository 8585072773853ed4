"""Registering applications: the redirect-URI rules and issuing client credentials.

Used by the CLI and the console alike, so the rules live in one place."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from app.config import is_loopback_host
from app.extensions import db
from app.models import Client, ClientType
from app.models.base import new_secret
from app.scopes import SUPPORTED_SCOPES, known_scopes

# RFC 8252 7.1: a private-use scheme is a reverse domain name, e.g. com.example.app
PRIVATE_SCHEME = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$")


class RegistrationError(ValueError):
    """What is wrong with a registration, in words an admin can act on."""


def redirect_uri_problem(uri: str) -> str | None:
    """Why `uri` cannot be registered as a redirect URI, or None when it can."""
    if not uri or uri != uri.strip() or any(c.isspace() for c in uri):
        return "must not be empty or contain spaces"
    if "*" in uri:
        return "must not contain a wildcard"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return "is not a valid URI"
    if not parts.scheme:
        return "must be absolute (include a scheme such as https://)"
    if parts.fragment or "#" in uri:
        return "must not contain a fragment (#...)"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "must not contain a user name or password"
    scheme = parts.scheme.lower()
    if scheme == "https":
        return None if parts.hostname else "must name a host"
    if scheme == "http":
        if is_loopback_host(parts.hostname):
            return None
        return "must use https (plain http is allowed only for 127.0.0.1, [::1] and localhost)"
    if PRIVATE_SCHEME.match(scheme):
        return None
    return "must use https, loopback http, or a private-use scheme in reverse-DNS form (com.example.app:/callback)"


def check_redirect_uris(uris: list[str], what: str = "Redirect URI") -> list[str]:
    problems = [f"{what} {uri!r} {problem}" for uri in uris if (problem := redirect_uri_problem(uri))]
    if problems:
        raise RegistrationError("; ".join(problems))
    return list(dict.fromkeys(uris))


@dataclass
class NewClient:
    name: str
    redirect_uris: list[str]
    post_logout_redirect_uris: list[str] = field(default_factory=list)
    public: bool = False
    auth_method: str = "client_secret_basic"
    scope: str = " ".join(SUPPORTED_SCOPES)
    trusted: bool = False
    require_pkce: bool = True
    owner_id: str | None = None
    homepage_url: str | None = None
    logo_url: str | None = None
    policy_url: str | None = None
    tos_url: str | None = None
    client_id: str | None = None


def register_client(spec: NewClient) -> tuple[Client, str | None]:
    """Create the client; returns it with its secret (None for public clients). The secret is
    shown once by the caller: only its hash is stored."""
    name = (spec.name or "").strip()
    if not name or len(name) > 120:
        raise RegistrationError("Name is required (at most 120 characters)")
    if not spec.redirect_uris:
        raise RegistrationError("At least one redirect URI is required")
    redirect_uris = check_redirect_uris(spec.redirect_uris)
    logout_uris = check_redirect_uris(spec.post_logout_redirect_uris, "Post-logout redirect URI")
    if spec.auth_method not in ("client_secret_basic", "client_secret_post"):
        raise RegistrationError("Authentication method must be client_secret_basic or client_secret_post")
    if spec.public and not spec.require_pkce:
        raise RegistrationError("PKCE cannot be turned off for a public client")
    scopes = known_scopes(spec.scope)
    if "openid" not in scopes:
        scopes.insert(0, "openid")
    client = Client(
        client_id=spec.client_id or new_secret(16),
        name=name,
        client_type=ClientType.PUBLIC if spec.public else ClientType.CONFIDENTIAL,
        token_endpoint_auth_method="none" if spec.public else spec.auth_method,
        redirect_uris=redirect_uris,
        post_logout_redirect_uris=logout_uris,
        allowed_scopes=" ".join(scopes),
        require_pkce=spec.require_pkce,
        trusted=spec.trusted,
        owner_id=spec.owner_id,
        homepage_url=spec.homepage_url,
        logo_url=spec.logo_url,
        policy_url=spec.policy_url,
        tos_url=spec.tos_url,
    )
    secret = None
    if not spec.public:
        secret = new_secret(32)
        client.set_secret(secret)
    db.session.add(client)
    db.session.commit()
    return client, secret


def rotate_secret(client: Client) -> str:
    if client.is_public:
        raise RegistrationError("A public client has no secret")
    secret = new_secret(32)
    client.set_secret(secret)
    db.session.commit()
    return secret
