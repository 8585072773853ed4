"""The two grants: authorization code (with PKCE and OIDC) and refresh token (with rotation).

Authlib drives the protocol; these subclasses supply storage, single use and reuse detection."""

from __future__ import annotations

from datetime import timedelta

from authlib.oauth2.rfc6749 import InvalidGrantError, grants
from flask import current_app

from app import metrics
from app.extensions import db
from app.models import AuthorizationCode, Client
from app.models.base import new_secret, new_uuid, sha256_hex, utcnow
from app.oauth import refresh_grace, tokens

_INSERT_CODE = AuthorizationCode.__table__.insert()
TOKEN_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_AUTH_METHODS

    @staticmethod
    def client_requires_pkce(client: Client) -> bool:
        """PKCE is required of every client; only a confidential legacy app may be relaxed."""
        return client.require_pkce or client.is_public

    def generate_authorization_code(self) -> str:
        """256 random bits, like every other secret we issue. Authlib's generator draws each of its
        48 characters with its own call to the system's random source: 47 us against 1 us here."""
        return new_secret(32)

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
            "amr": getattr(request, "amr", None) or "pwd",
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
            metrics.reuse_detected("code", row)
            tokens.revoke_grant(row.grant_id)
            return None
        return row

    def create_token_response(self):
        code: AuthorizationCode = self.request.authorization_code
        if not tokens.consume_code(code):
            # Lost a race with a concurrent redemption of the same code: that is reuse too.
            db.session.rollback()
            metrics.reuse_detected("code", code)
            tokens.revoke_grant(code.grant_id)
            raise InvalidGrantError("The authorization code has already been used.")
        self.request.auth_time = code.auth_time
        self.request.amr = code.amr
        response = super().create_token_response()
        issued_to = self.request.client.client_id, self.request.user.id
        db.session.commit()
        metrics.tokens_issued("authorization_code", *issued_to)
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
            if refresh_grace.replay(row, refresh_token) is not None:
                return row  # a retry within the grace window: answered in create_token_response
            # A rotated-out refresh token came back: someone holds a copy. Revoke the family.
            metrics.reuse_detected("refresh_token", row)
            tokens.revoke_grant(row.grant_id)
            return None
        if not row.refresh_is_usable() or not row.client.is_active:
            return None
        return row

    def create_token_response(self):
        old = self.request.refresh_token
        presented = self.request.form.get("refresh_token") or ""
        if not tokens.consume_refresh_token(old):
            # Already rotated (by an earlier request, or a concurrent one that just committed):
            # the same answer again within the grace window, else reuse revokes the family.
            db.session.rollback()
            answer = refresh_grace.replay(old, presented)
            if answer is not None:
                return 200, answer, self.TOKEN_RESPONSE_HEADER
            metrics.reuse_detected("refresh_token", old)
            tokens.revoke_grant(old.grant_id)
            raise InvalidGrantError("The refresh token has already been used.")
        self.request.auth_time = old.auth_time
        self.request.amr = old.amr
        status, body, headers = super().create_token_response()
        refresh_grace.seal(old, presented, body)
        issued_to = self.request.client.client_id, self.request.user.id
        db.session.commit()
        metrics.tokens_issued("refresh_token", *issued_to)
        return status, body, headers

    def authenticate_user(self, refresh_token):
        return refresh_token.user

    def revoke_old_credential(self, refresh_token) -> None:
        """Already marked used by consume_refresh_token; its access token stays valid until it
        expires (the new pair replaces it; reuse of the old refresh revokes everything)."""
