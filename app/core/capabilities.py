"""What this provider supports, said once.

Discovery advertises these lists (app/protocol/metadata.py), the grants and endpoints enforce them
(app/protocol/), the registration rules, the console's form and the CLI offer them. A capability
added or dropped here changes all of them together: a client developer reading discovery never
meets a method the token endpoint refuses, nor a form offering one discovery does not name.
"""

from __future__ import annotations

from typing import Final

# -- endpoints (fixed by the platform's spec; the issuer is ISSUER_URL) ------------------------------

DISCOVERY_PATH: Final = "/.well-known/openid-configuration"
# RFC 8414 authorization server metadata (what OAuth-only clients such as MCP agents read first) and,
# on the tool server, RFC 9728 protected resource metadata (root form, and path-suffixed below).
AS_METADATA_PATH: Final = "/.well-known/oauth-authorization-server"
RESOURCE_METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
AUTHORIZE_PATH: Final = "/api/auth/oauth2/authorize"
TOKEN_PATH: Final = "/api/auth/oauth2/token"
USERINFO_PATH: Final = "/api/auth/oauth2/userinfo"
JWKS_PATH: Final = "/api/auth/jwks"
REVOCATION_PATH: Final = "/api/auth/oauth2/revoke"
INTROSPECTION_PATH: Final = "/api/auth/oauth2/introspect"
END_SESSION_PATH: Final = "/api/auth/oauth2/endsession"
REGISTRATION_PATH: Final = "/api/auth/oauth2/register"  # RFC 7591, for AI agents (public clients only)

# -- the flow -------------------------------------------------------------------------------------

RESPONSE_TYPES: Final = ("code",)
RESPONSE_MODES: Final = ("query",)
GRANT_TYPES: Final = ("authorization_code", "refresh_token")
CODE_CHALLENGE_METHODS: Final = ("S256",)  # PKCE, required of every client; `plain` is refused
PROMPTS: Final = ("none", "login", "consent")
SIGNING_ALG: Final = "RS256"  # ID tokens (OIDC Core requires RS256 support); the key set's keys

# -- how a client authenticates (OIDC Registration `token_endpoint_auth_method`) ----------------------

SECRET_AUTH_METHODS: Final = ("client_secret_basic", "client_secret_post")  # confidential clients
DEFAULT_SECRET_AUTH_METHOD: Final = "client_secret_basic"
PUBLIC_AUTH_METHOD: Final = "none"  # public clients: PKCE alone
TOKEN_AUTH_METHODS: Final = (*SECRET_AUTH_METHODS, PUBLIC_AUTH_METHOD)
# Public clients may revoke their own tokens (RFC 7009 section 5); only confidential clients, which
# can prove who they are, may introspect.
REVOCATION_AUTH_METHODS: Final = TOKEN_AUTH_METHODS
INTROSPECTION_AUTH_METHODS: Final = SECRET_AUTH_METHODS
