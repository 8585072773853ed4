"""OpenID Connect: the claims a member releases, and the ID token that carries them."""

from __future__ import annotations

import time
from typing import Any

from authlib.oauth2.rfc6749 import OAuth2Request
from authlib.oidc.core import UserInfo
from authlib.oidc.core.grants import OpenIDCode, OpenIDToken
from flask import current_app, g
from joserfc.jwk import RSAKey

from app.core.assurance import acr_for
from app.core.capabilities import SIGNING_ALG
from app.core.scopes import claims_for, scope_list
from app.protocol.jwks import keystore
from app.store.apps import App
from app.store.members import MemberFacts


def user_claims(user: MemberFacts, scope: str) -> UserInfo:
    """The claims `scope` releases for `user`, plus the stable user id (always released, under
    the configured namespaced name). Feeds both the ID token and userinfo."""
    allowed = claims_for(scope_list(scope))
    available = {
        "sub": user.sub,
        "name": user.name,
        "email": user.email,
        "email_verified": bool(user.email_verified),
    }
    claims = UserInfo({k: v for k, v in available.items() if k in allowed or k == "sub"})
    claims[current_app.config["USER_ID_CLAIM"]] = user.id
    return claims


class IDTokenMixin:
    """ID token parts shared by the code and refresh grants: issuer, audience, lifetime, the
    member's real login time, and the active key (with its kid) from the key store."""

    def get_client_algorithm(self, client: App) -> str:
        return SIGNING_ALG

    def get_encode_header(self, client: App) -> dict[str, str]:
        kid, key = keystore.signing_key()
        g.id_token_key = key  # the same key signs that the header names, even mid-rotation
        return {"alg": SIGNING_ALG, "kid": kid, "typ": "JWT"}

    def resolve_client_private_key(self, client: App) -> RSAKey:
        return g.pop("id_token_key")

    def get_client_claims(self, client: App) -> dict[str, Any]:
        now = int(time.time())
        return {
            "iss": current_app.config["ISSUER_URL"],
            "aud": client.get_client_id(),
            "iat": now,
            "exp": now + int(current_app.config["ID_TOKEN_LIFETIME"]),
        }

    def get_compatible_claims(self, request: OAuth2Request) -> dict[str, Any]:
        """The login's time and how it was made (`amr`, RFC 8176) with its assurance (`acr`), kept
        from the sign-in through the code and every refresh."""
        claims = self.get_client_claims(request.client)
        claims["auth_time"] = int(request.auth_time.timestamp())
        amr = (getattr(request, "amr", None) or "pwd").split()
        claims["amr"], claims["acr"] = amr, acr_for(amr)
        return claims

    def generate_user_info(self, user: MemberFacts, scope: str) -> UserInfo:
        return user_claims(user, scope)


class CodeIDToken(IDTokenMixin, OpenIDCode):
    """ID token for the authorization-code grant; adds `nonce` when the request sent one."""

    def exists_nonce(self, nonce: str, request: OAuth2Request) -> bool:
        # Nonce replay matters for implicit/hybrid flows; a code is single-use already.
        return False


class RefreshIDToken(IDTokenMixin, OpenIDToken):
    """A fresh ID token on refresh (OIDC Core 12.2): same sub, original auth_time, no nonce."""
