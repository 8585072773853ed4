"""The two grants: authorization code (with PKCE and OIDC) and refresh token (with rotation).

Authlib drives the protocol; these subclasses supply storage, single use and reuse detection."""

from __future__ import annotations

from datetime import timedelta

from authlib.oauth2.rfc6749 import InvalidGrantError, grants
from flask import current_app

from app.extensions import db
from app.models import AuthorizationCode, Client
from app.models.base import new_uuid, sha256_hex, utcnow
from app.oauth import tokens

_INSERT_CODE = AuthorizationCode.__table__.insert()
TOKEN_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_AUTH_METHODS

    @staticmethod
    def client_requires_pkce(client: Client) -> bool:
        """PKCE is required of every client; only a confidential legacy app may be relaxed."""
        return client.require_pkce or client.is_public

    def save_authorization_code(self, code: str, request) -> None:
        """Store the hash of the code with what the token request must match. The granted
        scope and the login time were decided by the consent step (see authorize.py). A Core
        INSERT: the row is only read back by the token request."""
        now = utcnow()
        db.session.execute(_INSERT_CODE, {
            "code_hash": sha256_hex(code),
            "client_id": request.client.id,
            "user_id": request.user.id,
            "grant_id": new_uuid(),
            "redirect_uri": request.payload.redirect_uri,
            "scope": request.granted_scope,
            "nonce": request.payload.data.get("nonce") or None,
            "code_challenge": request.payload.data.get("code_challenge"),
            "code_challenge_method": request.payload.data.get("code_challenge_method"),
            "auth_time": request.auth_time,
            "issued_at": now,
            "expires_at": now + timedelta(seconds=int(current_app.config["AUTHORIZATION_CODE_LIFETIME"])),
        })
        db.session.commit()

    def query_authorization_code(self, code: str, client: Client) -> AuthorizationCode | None:
        row = tokens.find_code(code)
        if row is None or row.client_id != client.id or row.is_expired():
            return None
        if row.used_at is not None:
            # RFC 6749 4.1.2: a code used twice revokes the tokens issued from it.
            tokens.revoke_grant(row.grant_id)
            return None
        return row

    def create_token_response(self):
        code: AuthorizationCode = self.request.authorization_code
        if not tokens.consume_code(code):
            # Lost a race with a concurrent redemption of the same code: that is reuse too.
            db.session.rollback()
            tokens.revoke_grant(code.grant_id)
            raise InvalidGrantError("The authorization code has already been used.")
        self.request.auth_time = code.auth_time
        response = super().create_token_response()
        db.session.commit()
        return response

    def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
        """Kept (marked used) rather than deleted, so a replay can be recognized; purged later."""

    def authenticate_user(self, authorization_code: AuthorizationCode):
        return authorization_code.user


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotate on every use

    def authenticate_refresh_token(self, refresh_token: str):
        row = tokens.find_refresh_token(refresh_token)
        if row is None:
            return None
        if row.refresh_used_at is not None:
            # A rotated-out refresh token came back: someone holds a copy. Revoke the family.
            tokens.revoke_grant(row.grant_id)
            return None
        if not row.refresh_is_usable() or not row.client.is_active:
            return None
        return row

    def create_token_response(self):
        old = self.request.refresh_token
        if not tokens.consume_refresh_token(old):
            db.session.rollback()
            tokens.revoke_grant(old.grant_id)
            raise InvalidGrantError("The refresh token has already been used.")
        self.request.auth_time = old.auth_time
        response = super().create_token_response()
        db.session.commit()
        return response

    def authenticate_user(self, refresh_token):
        return refresh_token.user

    def revoke_old_credential(self, refresh_token) -> None:
        """Already marked used by consume_refresh_token; its access token stays valid until it
        expires (the new pair replaces it; reuse of the old refresh revokes everything)."""
