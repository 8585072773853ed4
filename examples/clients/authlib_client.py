"""Sign in with Credits ID from Python: Authlib's OAuth 2 client (requests) with discovery, PKCE
(S256) and a nonce; the ID token verified against the provider's key set with joserfc and
Authlib's ID-token claim rules; userinfo; refresh with rotation.

    pip install Authlib requests

This file is run by tests/interop/test_authlib_client.py and shown in docs/integrating.md."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

DEFAULT_SCOPE = "openid profile email credits:read offline_access"


def discover(issuer: str) -> dict:
    """The provider's metadata; its `issuer` must be exactly the one we asked (OIDC Discovery 4.3)."""
    response = requests.get(issuer.rstrip("/") + "/.well-known/openid-configuration", timeout=10)
    response.raise_for_status()
    metadata = response.json()
    if metadata["issuer"] != issuer.rstrip("/"):
        raise ValueError(f"issuer mismatch: {metadata['issuer']!r}")
    return metadata


class CreditsIdClient:
    def __init__(self, issuer: str, client_id: str, client_secret: str, redirect_uri: str, scope: str = DEFAULT_SCOPE):
        self.metadata = discover(issuer)
        self.session = OAuth2Session(
            client_id,
            client_secret,
            scope=scope,
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_basic",
        )

    def start(self) -> tuple[str, dict]:
        """The URL to send the browser to, and what to keep in the user's session until the callback."""
        code_verifier = generate_token(48)
        nonce = generate_token(20)
        url, state = self.session.create_authorization_url(
            self.metadata["authorization_endpoint"], code_verifier=code_verifier, nonce=nonce
        )
        return url, {"state": state, "code_verifier": code_verifier, "nonce": nonce}

    def finish(self, callback_url: str, pending: dict) -> tuple[dict, dict]:
        """At the redirect URI: check `iss` (RFC 9207), redeem the code (Authlib checks `state`),
        then verify the ID token. Returns the token response and the ID token's claims."""
        params = parse_qs(urlsplit(callback_url).query)
        if params.get("iss") != [self.metadata["issuer"]]:
            raise ValueError("the response does not come from the expected issuer")
        token = self.session.fetch_token(
            self.metadata["token_endpoint"],
            authorization_response=callback_url,
            state=pending["state"],
            code_verifier=pending["code_verifier"],
        )
        return token, self.verify_id_token(token, pending["nonce"])

    def verify_id_token(self, token: dict, nonce: str | None) -> dict:
        """Signature against the key set (by `kid`), then iss, aud, exp, iat, nonce and at_hash."""
        keys = KeySet.import_key_set(requests.get(self.metadata["jwks_uri"], timeout=10).json())
        algorithms = self.metadata["id_token_signing_alg_values_supported"]  # ["RS256"]
        decoded = jwt.decode(token["id_token"], keys, registry=JWSRegistry(algorithms=algorithms))
        claims = CodeIDToken(
            decoded.claims,
            decoded.header,
            {
                "iss": {"essential": True, "value": self.metadata["issuer"]},
                "aud": {"essential": True, "value": self.session.client_id},
            },
            {"client_id": self.session.client_id, "nonce": nonce, "access_token": token["access_token"]},
        )
        claims.validate(leeway=60)
        return dict(claims)

    def userinfo(self) -> dict:
        response = self.session.get(self.metadata["userinfo_endpoint"], timeout=10)
        response.raise_for_status()
        return response.json()

    def refresh(self) -> dict:
        """A new access token (and a new refresh token: the old one is spent, store the new one)."""
        return self.session.refresh_token(self.metadata["token_endpoint"])
