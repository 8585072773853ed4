"""Registering applications: the redirect-URI rules and issuing client credentials.

Used by the CLI and the console alike, so the rules live in one place. A service: it checks
everything before it writes, and joins the caller's transaction (the console page or the
command commits)."""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from app.core.capabilities import DEFAULT_SECRET_AUTH_METHOD, SECRET_AUTH_METHODS
from app.core.config import is_loopback_host
from app.core.scopes import SUPPORTED_SCOPES, known_scopes
from app.models import ClientType
from app.models.base import new_secret, sha256_hex, utcnow
from app.store import store
from app.store.apps import App, RegisteredApp

# RFC 8252 7.1: a private-use scheme is a reverse domain name, e.g. com.example.app
PRIVATE_SCHEME = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$")


CLIENT_ID_ALPHABET = string.ascii_letters + string.digits
CLIENT_ID_LENGTH = 22  # about 131 bits


def new_client_id() -> str:
    """A random public client id of letters and digits only: it is typed into shells, URLs and
    config files, where a leading '-' or a '_' reads as something else."""
    return "".join(secrets.choice(CLIENT_ID_ALPHABET) for _ in range(CLIENT_ID_LENGTH))


class RegistrationError(ValueError):
    """What is wrong with a registration, in words an admin can act on. `fields` names every
    problem by the form field it belongs to, so a page can show them all at once, each on its field."""

    def __init__(self, message: str, fields: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.fields = fields or {}


def redirect_uri_problem(uri: str, public: bool = False) -> str | None:
    """Why `uri` cannot be registered as a redirect URI, or None when it can. A native (public)
    app's loopback URI names the address, not `localhost` (RFC 8252 8.3: the name may resolve
    elsewhere, or be answered by another listener); any port it listens on is then accepted.

    One exception, for development: a public app (a single-page app on a dev server, typically)
    may register `http://localhost:<port>/...` with its fixed port, matched exactly like any other
    URI. The trade-off RFC 8252 8.3 warns about stays: `localhost` is a name, resolved by the
    machine (a hosts file or a resolver may send it off the loopback interface) and another
    program may hold that port first; a development URI, then, and not for production - which
    should register https, or 127.0.0.1 / [::1] without a port for a native app."""
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
        if public and parts.hostname == "localhost" and parts.port is None:
            return (
                "must name the loopback address 127.0.0.1 or [::1], not localhost, for a public app (RFC 8252 8.3); "
                "for development, http://localhost:<port>/... with the dev server's port is accepted"
            )
        if is_loopback_host(parts.hostname):
            return None
        return "must use https (plain http is allowed only for 127.0.0.1, [::1] and localhost)"
    if PRIVATE_SCHEME.match(scheme):
        return None
    return "must use https, loopback http, or a private-use scheme in reverse-DNS form (com.example.app:/callback)"


@dataclass
class NewClient:
    name: str
    redirect_uris: list[str]
    post_logout_redirect_uris: list[str] = field(default_factory=list)
    public: bool = False
    auth_method: str = DEFAULT_SECRET_AUTH_METHOD
    scope: str = " ".join(SUPPORTED_SCOPES)
    trusted: bool = False
    require_pkce: bool = True
    owner_id: str | None = None
    homepage_url: str | None = None
    logo_url: str | None = None
    policy_url: str | None = None
    tos_url: str | None = None
    client_id: str | None = None


def link_problem(url: str, field: str | None = None) -> str | None:
    """Why `url` cannot be an app's homepage, logo, privacy-policy or terms link (they are shown
    to members as links and images), or None when it can. `field` is the link's attribute
    (e.g. "logo_url")."""
    if len(url) > 500:
        return "must be at most 500 characters"
    if any(c.isspace() for c in url):
        return "must not contain spaces"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "must be an absolute https:// URL"
    if parts.username is not None or parts.password is not None:
        return "must not contain a user name or password"
    if field == "logo_url" and parts.scheme.lower() != "https":
        # The consent and account pages load images over https only (img-src in app/core/security.py's
        # CSP): a plain-http logo, even on a loopback host, could never be shown.
        return "must use https: the consent page can load images only over https"
    if parts.scheme.lower() == "http" and not is_loopback_host(parts.hostname):
        return "must use https (plain http is allowed only for 127.0.0.1, [::1] and localhost)"
    return None


LINK_FIELDS = {
    "homepage_url": "Homepage",
    "logo_url": "Logo URL",
    "policy_url": "Privacy policy URL",
    "tos_url": "Terms URL",
}


def registration_problems(spec: NewClient, public: bool) -> dict[str, list[str]]:
    """Every problem of a registration, by field (name, redirect_uris, post_logout_redirect_uris,
    the links, auth_method, require_pkce); empty when it is valid."""
    problems: dict[str, list[str]] = {}
    name = (spec.name or "").strip()
    if not name or len(name) > 120:
        problems["name"] = ["Name is required (at most 120 characters)"]
    if not spec.redirect_uris:
        problems["redirect_uris"] = ["At least one redirect URI is required"]
    for attr, what, uris, for_public in (
        ("redirect_uris", "Redirect URI", spec.redirect_uris, public),
        ("post_logout_redirect_uris", "Post-logout redirect URI", spec.post_logout_redirect_uris, False),
    ):
        found = [f"{what} {uri!r} {problem}" for uri in uris if (problem := redirect_uri_problem(uri, for_public))]
        if found:
            problems.setdefault(attr, []).extend(found)
    for attr, label in LINK_FIELDS.items():
        value = (getattr(spec, attr) or "").strip() or None
        if value is not None and (problem := link_problem(value, attr)):
            problems[attr] = [f"{label} {value!r} {problem}"]
    if spec.auth_method not in SECRET_AUTH_METHODS:
        problems["auth_method"] = [f"Authentication method must be {' or '.join(SECRET_AUTH_METHODS)}"]
    if public and not spec.require_pkce:
        problems["require_pkce"] = ["PKCE cannot be turned off for a public client"]
    return problems


def _checked_fields(spec: NewClient, public: bool) -> dict[str, Any]:
    """The column values of a valid registration, or RegistrationError naming every problem."""
    problems = registration_problems(spec, public)
    if problems:
        raise RegistrationError("; ".join(p for found in problems.values() for p in found), problems)
    name = (spec.name or "").strip()
    redirect_uris = list(dict.fromkeys(spec.redirect_uris))
    logout_uris = list(dict.fromkeys(spec.post_logout_redirect_uris))
    links = {attr: (getattr(spec, attr) or "").strip() or None for attr in LINK_FIELDS}
    scopes = known_scopes(spec.scope)
    if "openid" not in scopes:
        scopes.insert(0, "openid")
    return {
        "name": name,
        "token_endpoint_auth_method": "none" if public else spec.auth_method,
        "redirect_uris": redirect_uris,
        "post_logout_redirect_uris": logout_uris,
        "allowed_scopes": " ".join(scopes),
        "require_pkce": spec.require_pkce,
        "trusted": spec.trusted,
        **links,
    }


def register_client(spec: NewClient) -> tuple[RegisteredApp, str | None]:
    """Create the client; returns it with its secret (None for public clients). The secret is
    shown once by the caller: only its hash is stored. Written, not committed: the caller commits
    the app together with its audit row (one unit of work)."""
    fields = _checked_fields(spec, spec.public)
    secret = None if spec.public else new_secret(32)
    client = store().apps.insert(
        {
            "client_id": spec.client_id or new_client_id(),
            "client_type": (ClientType.PUBLIC if spec.public else ClientType.CONFIDENTIAL).value,
            "owner_id": spec.owner_id,
            "client_secret_hash": None if secret is None else sha256_hex(secret),
            **fields,
        }
    )
    return client, secret


def update_client(client: App, spec: NewClient) -> list[str]:
    """Change an app's details and URIs under the same rules as registration. The type
    (confidential/public), client id and owner are kept. Returns the names of what changed;
    the caller commits."""
    fields = _checked_fields(spec, client.is_public)
    changed = [attr for attr, value in fields.items() if getattr(client, attr) != value]
    if changed:
        store().apps.change(client.id, {attr: fields[attr] for attr in changed})
    return changed


MAX_SECRET_GRACE = timedelta(days=7)


def rotate_secret(client: App, grace: timedelta | None = None) -> str:
    """Issue a new secret (returned once; only its hash is kept). Without `grace` the old secret
    stops working at once; with it, the old one keeps working until the grace period ends, so
    the app can be redeployed without downtime. Only the secret just replaced is kept. Checked
    before anything changes; the caller commits."""
    if client.is_public:
        raise RegistrationError("A public client has no secret")
    if client.is_deleted:
        raise RegistrationError("The application is deleted")
    if grace is not None and not (timedelta(0) <= grace <= MAX_SECRET_GRACE):
        raise RegistrationError("The grace period must be between 0 and 7 days")
    secret = new_secret(32)
    store().apps.replace_secret_hash(client.id, sha256_hex(secret), utcnow() + grace if grace else None)
    return secret
